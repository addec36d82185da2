// Store the marker of one written Writer segment (the resume point) and its COVERS links.
// Parameters: $group_id (str); $segment_id (str); $props (map of scalar properties: index (int),
//   session (str), channel (str), mode (str), n_messages (int), first_turn_created (int),
//   last_turn_created (int), ts_first (str), ts_last (str), max_actions (int), attempted (int),
//   accepted (int), rejected (int), added (int), updated (int), report (str, JSON), stage (str),
//   model (str), calls (int), prompt_tokens (int), completion_tokens (int), latency_s (float,
//   seconds), written_at (str, ISO-8601 UTC), skipped (str, "" or "blank": no Writer call));
//   $message_ids (list[str], covered messages).
// Returns: id (str), covers (int, COVERS links made).
CREATE (s:Segment {group_id: $group_id, id: $segment_id})
SET s += $props
WITH s
CALL (s) {
  UNWIND $message_ids AS mid
  MATCH (m:Message {group_id: $group_id, id: mid})
  CREATE (s)-[:COVERS]->(m)
  RETURN count(m) AS covers
}
RETURN s.id AS id, covers
