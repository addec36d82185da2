// Written Writer segments of one group (resume points with their validation reports).
// Parameters: $group_id (str).
// Returns, ordered by index: props (map, every property of the Segment marker: id, index,
//   session, channel, mode, n_messages, ..., report (str, JSON), calls, prompt_tokens,
//   completion_tokens, latency_s, written_at).
MATCH (s:Segment {group_id: $group_id})
RETURN properties(s) AS props
ORDER BY s.index
