// The stored state of the given message ids: what a redelivery is compared with.
// Parameters: $group_id (str), $ids (list[str]).
// Returns one row per stored id: id, text, speaker (display name), person_id (str), speaker_id
//   (str or null: the platform user id its person is keyed by), session, channel, ts (str),
//   reply_to (str), text_history (list[str], earlier texts, oldest first; [] when never edited).
UNWIND $ids AS mid
MATCH (m:Message {group_id: $group_id, id: mid})
USING INDEX m:Message(group_id, id)  // a seek per id, whatever plan the statistics of the moment suggest
OPTIONAL MATCH (m)-[:SOURCE]->(p:Person)
RETURN m.id AS id, m.text AS text, m.speaker AS speaker, coalesce(p.id, m.speaker) AS person_id,
       p.speaker_id AS speaker_id,
       m.session AS session, coalesce(m.channel, '') AS channel, m.ts AS ts,
       coalesce(m.reply_to, '') AS reply_to, coalesce(m.text_history, []) AS text_history
