// Neighbouring turns of anchor messages along NEXT (at most $window before and after), inside
// the anchor's own session (SpeakerMem-R1 App. B.3: Expand follows session/turn).
// Parameters: $group_id (str), $ids (list[str], anchors), $window (int, 1..5).
// Returns: anchor (str), id (str), offset (int, negative = before the anchor).
UNWIND $ids AS mid
MATCH (a:Message {group_id: $group_id, id: mid})
CALL (a) {
  MATCH p = (x:Message)-[:NEXT*1..5]->(a)
  WHERE length(p) <= $window AND x.session = a.session
  RETURN x.id AS id, -length(p) AS offset
  UNION
  MATCH p = (a)-[:NEXT*1..5]->(x:Message)
  WHERE length(p) <= $window AND x.session = a.session
  RETURN x.id AS id, length(p) AS offset
}
RETURN a.id AS anchor, id, offset
ORDER BY anchor, offset
