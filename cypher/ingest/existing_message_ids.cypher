// Which of the given message ids are already stored in the group, and the highest write order.
// Parameters: $group_id (str), $ids (list[str]).
// Returns: existing (list[str]), max_turn_created (int, -1 when the group has no message).
OPTIONAL MATCH (m:Message {group_id: $group_id}) WHERE m.id IN $ids
WITH collect(m.id) AS existing
OPTIONAL MATCH (last:Message {group_id: $group_id})
RETURN existing, coalesce(max(last.turn_created), -1) AS max_turn_created
