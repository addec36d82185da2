// Number the sessions of the given channels 1, 2, ... in the order of their first message
// (turn 0); a session left without messages keeps its place after the others.
// Reads the group's sessions through the (group_id, id) constraint index and each session's
// first message among its own messages (IN_SESSION), so the cost follows the channel's sessions
// and their messages, never the rest of the store.
// Parameters: $group_id (str), $channels (list[str]).
// Returns: renumbered (int, sessions whose index changed).
UNWIND $channels AS ch
CALL (ch) {
  MATCH (s:Session {group_id: $group_id})
  USING INDEX s:Session(group_id, id)
  WHERE s.id IS NOT NULL AND coalesce(s.channel, '') = ch
  OPTIONAL MATCH (s)<-[:IN_SESSION]-(f:Message {turn: 0})
  WITH s, f ORDER BY f.order_instant IS NULL, f.order_instant, f.seq, s.index, s.id
  WITH collect(s) AS ordered
  UNWIND range(0, size(ordered) - 1) AS i
  WITH ordered[i] AS s, i + 1 AS rank
  WHERE s.index IS NULL OR s.index <> rank
  SET s.index = rank
  RETURN count(s) AS changed
}
RETURN sum(changed) AS renumbered
