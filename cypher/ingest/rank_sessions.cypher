// Number the sessions of the given channels 1, 2, ... in the order of their first message
// (turn 0); a session left without messages keeps its place after the others.
// Parameters: $group_id (str), $channels (list[str]).
// Returns: renumbered (int, sessions whose index changed).
UNWIND $channels AS ch
CALL (ch) {
  MATCH (s:Session {group_id: $group_id})
  WHERE coalesce(s.channel, '') = ch
  OPTIONAL MATCH (f:Message {group_id: $group_id, session: s.id, turn: 0})
  WITH s, f ORDER BY f.order_instant IS NULL, f.order_instant, f.seq, s.index, s.id
  WITH collect(s) AS ordered
  UNWIND range(0, size(ordered) - 1) AS i
  WITH ordered[i] AS s, i + 1 AS rank
  WHERE s.index IS NULL OR s.index <> rank
  SET s.index = rank
  RETURN count(s) AS changed
}
RETURN sum(changed) AS renumbered
