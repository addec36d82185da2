// The messages of one session in conversation order, with speaker and reply target.
// Neo4j Browser: first  :params {group_id: 'trail-trip', session: 's2'}  then paste this query
//   (Browser draws the NEXT and REPLY_TO links between the returned messages).
// Parameters: $group_id (str, the group id); $session (str, Session.id).
// Returns, ordered by turn then turn_created: message (Message node), speaker_node (Person
//   node), turn (int, 0-based), id (str), ts (str, ISO-8601), speaker (str, display name),
//   person_id (str), text (str, exactly as received), reply_to (str, id of the message it
//   answers, or '').
MATCH (m:Message {group_id: $group_id, session: $session})-[:SOURCE]->(p:Person)
RETURN m AS message, p AS speaker_node, m.turn AS turn, m.id AS id, m.ts AS ts,
       m.speaker AS speaker, p.id AS person_id, m.text AS text,
       coalesce(m.reply_to, '') AS reply_to
ORDER BY turn, m.turn_created
