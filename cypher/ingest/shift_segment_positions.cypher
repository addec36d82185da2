// Keep Writer segments' first_turn_created / last_turn_created (the positions of the first and
// last message they cover) in step when messages before or among them were placed or erased:
// read again from the COVERS links of every segment that reaches the moved region.
// Parameters: $group_id (str); $from (int, the smallest old position that moved).
// Returns: shifted (int, segments read again).
MATCH (s:Segment {group_id: $group_id})
WHERE s.last_turn_created >= $from
CALL (s) {
  MATCH (s)-[:COVERS]->(m:Message)
  RETURN min(m.turn_created) AS first, max(m.turn_created) AS last
}
SET s.first_turn_created = coalesce(first, s.first_turn_created),
    s.last_turn_created = coalesce(last, s.last_turn_created)
RETURN count(s) AS shifted
