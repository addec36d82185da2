// Neighbouring turns of anchor messages along NEXT (at most $window before and after), inside
// the anchor's own session (SpeakerMem-R1 App. B.3: Expand follows session/turn), each with the
// fields search/get_messages returns (one round trip instead of two).
// Parameters: $group_id (str), $ids (list[str], anchors), $window (int, 1..5).
// Returns: anchor (str), id (str), offset (int, negative = before the anchor), channel, speaker,
//   person_id (str, or null when the neighbour has no sender in the group: callers skip it),
//   session, turn (int), ts, text, turn_created (int).
UNWIND $ids AS mid
MATCH (a:Message {group_id: $group_id, id: mid})
CALL (a) {
  MATCH p = (x:Message)-[:NEXT*1..5]->(a)
  WHERE length(p) <= $window AND x.session = a.session
  RETURN x, -length(p) AS offset
  UNION
  MATCH p = (a)-[:NEXT*1..5]->(x:Message)
  WHERE length(p) <= $window AND x.session = a.session
  RETURN x, length(p) AS offset
}
OPTIONAL MATCH (x)-[:SOURCE]->(s:Person)
WHERE x.group_id = $group_id
RETURN a.id AS anchor, x.id AS id, offset, x.channel AS channel, x.speaker AS speaker,
       s.id AS person_id, x.session AS session, x.turn AS turn, x.ts AS ts, x.text AS text,
       x.turn_created AS turn_created
ORDER BY anchor, offset
