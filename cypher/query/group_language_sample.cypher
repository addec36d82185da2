// The texts of a group's latest messages, to tell which language the group writes in
// (graphmem.query.translate.group_language). Seeks the (group_id, turn_created) index from
// the end and stops after $n rows; the caller leaves out messages without text (no_text).
// Parameters: $group_id (str), $n (int, at most this many rows).
// Returns: text (str), no_text (bool); the latest message first.
MATCH (m:Message)
WHERE m.group_id = $group_id AND m.turn_created IS NOT NULL
RETURN m.text AS text, coalesce(m.no_text, false) AS no_text
ORDER BY m.group_id DESC, m.turn_created DESC
LIMIT $n
