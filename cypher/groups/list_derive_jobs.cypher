// One page of a group's derive jobs, newest first, with the progress GET /jobs/{id} reports
// (groups/get_derive_job: the Writer segments written since each job opened and their usage).
// Parameters: $group_id (str); $before_ts (str or null: only jobs created before it, or at it
//   with an id before $before_id; null for the first page); $before_id (str); $limit (int).
// Returns, ordered by created_at then id, both descending: job (map, every DeriveJob property),
//   segments_done (int), calls (int), prompt_tokens (int), completion_tokens (int),
//   records_added (int), records_updated (int), actions_rejected (int).
MATCH (j:DeriveJob {group_id: $group_id})
WHERE j.group_erased_at IS NULL  // receipts of an erased group under the same id are not this group's
  AND ($before_ts IS NULL OR j.created_at < $before_ts OR (j.created_at = $before_ts AND j.id < $before_id))
WITH j ORDER BY j.created_at DESC, j.id DESC LIMIT $limit
CALL (j) {
  OPTIONAL MATCH (s:Segment {group_id: $group_id})
    WHERE s.index > j.segments_before
  RETURN count(s) AS segments_done,
         coalesce(sum(s.calls), 0) AS calls, coalesce(sum(s.prompt_tokens), 0) AS prompt_tokens,
         coalesce(sum(s.completion_tokens), 0) AS completion_tokens,
         coalesce(sum(s.added), 0) AS records_added, coalesce(sum(s.updated), 0) AS records_updated,
         coalesce(sum(s.rejected), 0) AS actions_rejected
}
RETURN properties(j) AS job, segments_done, calls, prompt_tokens, completion_tokens, records_added,
       records_updated, actions_rejected
ORDER BY j.created_at DESC, j.id DESC
