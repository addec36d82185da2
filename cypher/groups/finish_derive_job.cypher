// Close a derive job this runner holds: state "done" or "failed" (with the error). An empty
// $error keeps the last error the job waited out (a rate limit), so it stays visible.
// Parameters: $job_id (str); $runner (str); $state (str, "done" | "failed");
//   $error (str, "" when done); $now_iso (str, ISO-8601 UTC).
// Returns: finished (bool, false when another runner holds the job); no row for an unknown job.
MATCH (j:DeriveJob {id: $job_id})
SET j._LOCK_ = true
WITH j, j.runner = $runner AND j.state = 'running' AS held
SET j.state = CASE WHEN held THEN $state ELSE j.state END,
    j.error = CASE WHEN held AND $error <> '' THEN $error ELSE j.error END,
    j.finished_at = CASE WHEN held THEN $now_iso ELSE j.finished_at END,
    j.updated_at = CASE WHEN held THEN $now_iso ELSE j.updated_at END,
    j.lease_until = CASE WHEN held THEN 0.0 ELSE j.lease_until END
REMOVE j._LOCK_
RETURN held AS finished
