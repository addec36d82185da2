// Messages of one group inside instant windows or sessions (time anchors), best cosine first.
// Each window is one seek of the (group_id, instant) range index message_group_instant, and each
// asked session index one seek of session_group_index: only the anchored messages are read
// (their vectors included), never every message or session of the group (docs/scale.md).
// Parameters: $group_id (str), $windows (list of [start, end) epoch-second pairs),
//   $sessions (list[int], session indexes), $vector (list[float], L2-normed), $k (int),
//   $max_instant (float epoch seconds, or null for no limit).
// Returns: id (str), score (float in [0, 1], Neo4j's (1 + cosine) / 2), person_id (str or null,
//   the sender), best first.
CALL () {
  UNWIND $windows AS w
  WITH w[0] AS lo, w[1] AS hi
  // one range seek per window: the bounds are imported into a subquery, so the seek cannot be
  // hoisted out of the loop, and the hint asks for a SEEK: on a store that holds little more
  // than this group (a fresh test store) the planner otherwise scans the whole index and
  // filters (USING INDEX alone allows that)
  CALL (lo, hi) {
    MATCH (m:Message)
    USING INDEX SEEK m:Message(group_id, instant)
    WHERE m.group_id = $group_id AND m.instant >= lo AND m.instant < hi
    RETURN m
  }
  RETURN m
  UNION
  // one seek of session_group_index per asked index (a session index exists once per channel)
  UNWIND $sessions AS idx
  CALL (idx) {
    MATCH (s:Session)
    USING INDEX SEEK s:Session(group_id, index)
    WHERE s.group_id = $group_id AND s.index = idx
    MATCH (s)<-[:IN_SESSION]-(m:Message)
    RETURN m
  }
  RETURN m
}
WITH m
WHERE m.embedding IS NOT NULL AND ($max_instant IS NULL OR m.instant <= $max_instant)
WITH m, vector.similarity.cosine(m.embedding, $vector) AS score
ORDER BY score DESC, m.turn_created
LIMIT $k
RETURN m.id AS id, score, [(m)-[:SOURCE]->(p:Person) | p.id][0] AS person_id
