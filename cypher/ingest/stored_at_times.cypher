// The stored messages of one group written at the given times (graphmem.verbatim.ingest: an
// edited message whose platform keeps no stable id is joined to the one stored message of its
// time and speaker that the input no longer holds).
// Parameters: $group_id (str), $ts (list[str], normalised timestamps), $exclude (list[str], the
//   input's message ids).
// Returns one row per message, as ingest/stored_messages: id, text, speaker, person_id,
//   speaker_id, session, channel, ts, reply_to, text_history.
MATCH (m:Message {group_id: $group_id})
WHERE m.ts IN $ts AND NOT m.id IN $exclude
OPTIONAL MATCH (m)-[:SOURCE]->(p:Person)
RETURN m.id AS id, m.text AS text, m.speaker AS speaker, coalesce(p.id, m.speaker) AS person_id,
       p.speaker_id AS speaker_id,
       m.session AS session, coalesce(m.channel, '') AS channel, m.ts AS ts,
       coalesce(m.reply_to, '') AS reply_to, coalesce(m.text_history, []) AS text_history
