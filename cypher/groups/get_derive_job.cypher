// One derive job and its progress, read from what is stored: the Writer segments of its group
// written since the job opened (index above segments_before) and their token usage; for a job
// of an erased group, the counters its receipt kept.
// Parameters: $job_id (str).
// Returns (no row for an unknown job): job (map, every DeriveJob property), segments_done (int),
//   calls (int), prompt_tokens (int), completion_tokens (int), records_added (int),
//   records_updated (int), actions_rejected (int).
MATCH (j:DeriveJob {id: $job_id})
OPTIONAL MATCH (s:Segment {group_id: j.group_id})
  WHERE j.group_erased_at IS NULL AND s.index > j.segments_before
WITH j, count(s) AS done, coalesce(sum(s.calls), 0) AS calls, coalesce(sum(s.prompt_tokens), 0) AS prompt_tokens,
     coalesce(sum(s.completion_tokens), 0) AS completion_tokens, coalesce(sum(s.added), 0) AS added,
     coalesce(sum(s.updated), 0) AS updated, coalesce(sum(s.rejected), 0) AS rejected
// the receipt of a job of an erased group keeps the counters it had (groups/fence_group): the
// segments are gone, and a group re-created under the id has segments of its own
RETURN properties(j) AS job, coalesce(j.receipt_segments_done, done) AS segments_done,
       coalesce(j.receipt_calls, calls) AS calls, coalesce(j.receipt_prompt_tokens, prompt_tokens) AS prompt_tokens,
       coalesce(j.receipt_completion_tokens, completion_tokens) AS completion_tokens,
       coalesce(j.receipt_records_added, added) AS records_added,
       coalesce(j.receipt_records_updated, updated) AS records_updated,
       coalesce(j.receipt_actions_rejected, rejected) AS actions_rejected
