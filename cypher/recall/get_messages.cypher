// Messages of one group by id, with the speaker's person id.
// Parameters: $group_id (str), $ids (list[str]).
// Returns: id, channel, speaker, person_id, session, turn (int), ts, text, turn_created (int).
UNWIND $ids AS mid
MATCH (m:Message {group_id: $group_id, id: mid})-[:SOURCE]->(p:Person)
RETURN m.id AS id, m.channel AS channel, m.speaker AS speaker, p.id AS person_id,
       m.session AS session, m.turn AS turn, m.ts AS ts, m.text AS text,
       m.turn_created AS turn_created
