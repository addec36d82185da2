// Every person-to-person link in one group's conversation, one row per link: a REPLY_TO from
// a message to another person's message, or a NEXT hand-over where another person spoke just
// before. Links of a person to themselves are left out. The graph page aggregates these rows
// (filtered by session and time) into who-talks-to-whom counts; see who_talks_to_whom.
// Neo4j Browser: first  :param group_id => 'trail-trip'  then paste this query.
// Parameters: $group_id (str, the group id).
// Returns, ordered by turn_created then kind: kind ('reply' | 'next'), message_id (str, the
//   later message: the reply, or the one that followed), session (str), channel (str),
//   ts (str, ISO-8601), instant (float, epoch seconds), turn_created (int), from_id (str,
//   Person.id of who wrote message_id), from_name (str), to_id (str, Person.id of whom they
//   answered or followed), to_name (str), target_id (str, the message replied to or followed).
MATCH (m:Message {group_id: $group_id})-[:SOURCE]->(a:Person)
CALL (m, a) {
  MATCH (m)-[:REPLY_TO]->(t:Message)-[:SOURCE]->(b:Person)
  WHERE b <> a
  RETURN 'reply' AS kind, t, b
  UNION ALL
  MATCH (t:Message)-[:NEXT]->(m)
  MATCH (t)-[:SOURCE]->(b:Person)
  WHERE b <> a
  RETURN 'next' AS kind, t, b
}
RETURN kind, m.id AS message_id, m.session AS session, coalesce(m.channel, '') AS channel,
       m.ts AS ts, m.instant AS instant, m.turn_created AS turn_created,
       a.id AS from_id, a.name AS from_name, b.id AS to_id, b.name AS to_name, t.id AS target_id
ORDER BY turn_created, kind
