// One derive job and its progress, read from what is stored: the Writer segments of its group
// written since the job opened (index above segments_before) and their token usage.
// Parameters: $job_id (str).
// Returns (no row for an unknown job): job (map, every DeriveJob property), segments_done (int),
//   calls (int), prompt_tokens (int), completion_tokens (int), records_added (int),
//   records_updated (int), actions_rejected (int).
MATCH (j:DeriveJob {id: $job_id})
OPTIONAL MATCH (s:Segment {group_id: j.group_id})
  WHERE s.index > j.segments_before
RETURN properties(j) AS job, count(s) AS segments_done,
       coalesce(sum(s.calls), 0) AS calls, coalesce(sum(s.prompt_tokens), 0) AS prompt_tokens,
       coalesce(sum(s.completion_tokens), 0) AS completion_tokens,
       coalesce(sum(s.added), 0) AS records_added, coalesce(sum(s.updated), 0) AS records_updated,
       coalesce(sum(s.rejected), 0) AS actions_rejected
