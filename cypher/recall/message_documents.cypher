// Fulltext documents of some messages of one group, with speaker, instant and NEXT neighbours.
// Parameters: $group_id (str), $ids (list[str]).
// Returns: id (str), doc (str, search_text), person_id (str), instant (float epoch seconds or null),
//   prev_id / next_id (str or null: the turns before and after it on NEXT, its channel's order),
//   and the fields of search/get_messages (channel, speaker, session, turn, ts, text, turn_created).
UNWIND $ids AS mid
MATCH (m:Message {group_id: $group_id, id: mid})-[:SOURCE]->(p:Person)
RETURN m.id AS id, m.search_text AS doc, p.id AS person_id, m.instant AS instant,
       [(a:Message)-[:NEXT]->(m) | a.id][0] AS prev_id, [(m)-[:NEXT]->(b:Message) | b.id][0] AS next_id,
       m.channel AS channel, m.speaker AS speaker, m.session AS session, m.turn AS turn, m.ts AS ts,
       m.text AS text, m.turn_created AS turn_created
