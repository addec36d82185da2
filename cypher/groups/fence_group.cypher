// Begin erasing one group (graphmem.groups.service.forget_group), in its own transaction: take
// the Group node's write lock (loads, derive segments, embed batches and erasures of the group
// in flight commit first), mark the group `erasing` (kept from an earlier, interrupted call),
// so that every later write of it is refused until the deletion is done (ingest/lock_group,
// ingest/merge_group, memory/lock_segment, groups/open_derive_job, the embed templates), move
// its erasure count (a derive that read the group before writes nothing of what it read) and
// its vector_rev (process caches drop it), and cancel its open derive jobs.
// Every job of the group is kept as a receipt (no chat text), marked with group_erased_at, with
// its progress counters as they stand (receipt_*: the segments they are read from go now).
// Parameters: $group_id (str); $now_iso (str, ISO-8601 UTC).
// Returns: found (bool, the Group node exists), cancelled (list[str], ids of the jobs this call
//   cancelled; none when the group does not exist).
OPTIONAL MATCH (g:Group {id: $group_id})
SET g.erasing = coalesce(g.erasing, $now_iso),
    g.erasures = coalesce(g.erasures, 0) + 1,
    g.vector_rev = coalesce(g.vector_rev, 0) + 1
WITH g
OPTIONAL MATCH (j:DeriveJob {group_id: $group_id}) WHERE g IS NOT NULL
CALL (j) {
  OPTIONAL MATCH (s:Segment {group_id: $group_id})
    WHERE j.group_erased_at IS NULL AND s.index > j.segments_before
  RETURN count(s) AS done, coalesce(sum(s.calls), 0) AS calls,
         coalesce(sum(s.prompt_tokens), 0) AS prompt_tokens,
         coalesce(sum(s.completion_tokens), 0) AS completion_tokens, coalesce(sum(s.added), 0) AS added,
         coalesce(sum(s.updated), 0) AS updated, coalesce(sum(s.rejected), 0) AS rejected
}
WITH g, j, j.state IN ['queued', 'running'] AS open, done, calls, prompt_tokens, completion_tokens, added,
     updated, rejected
FOREACH (x IN CASE WHEN j IS NOT NULL AND j.group_erased_at IS NULL THEN [j] ELSE [] END |
  SET x.receipt_segments_done = done, x.receipt_calls = calls, x.receipt_prompt_tokens = prompt_tokens,
      x.receipt_completion_tokens = completion_tokens, x.receipt_records_added = added,
      x.receipt_records_updated = updated, x.receipt_actions_rejected = rejected)
SET j.state = CASE WHEN open THEN 'cancelled' ELSE j.state END,
    j.error = CASE WHEN open THEN 'cancelled: the group was erased' ELSE j.error END,
    j.finished_at = CASE WHEN open THEN $now_iso ELSE j.finished_at END,
    j.updated_at = CASE WHEN open THEN $now_iso ELSE j.updated_at END,
    j.lease_until = CASE WHEN open THEN 0.0 ELSE j.lease_until END,
    j.group_erased_at = coalesce(j.group_erased_at, $now_iso)
RETURN count(DISTINCT g) > 0 AS found, collect(CASE WHEN open THEN j.id END) AS cancelled
