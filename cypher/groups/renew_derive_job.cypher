// Extend the lease of a derive job this runner holds and record its rate-limit waits and last
// error; nothing changes when another runner holds it now.
// Parameters: $job_id (str); $runner (str); $lease_until (float, epoch seconds);
//   $now_iso (str, ISO-8601 UTC); $rate_limited (int, waits to add); $error (str, last error or "").
// Returns: held (bool, this runner still holds the job); no row for an unknown job.
MATCH (j:DeriveJob {id: $job_id})
SET j._LOCK_ = true
WITH j, j.runner = $runner AND j.state = 'running' AS held
SET j.lease_until = CASE WHEN held THEN $lease_until ELSE j.lease_until END,
    j.updated_at = CASE WHEN held THEN $now_iso ELSE j.updated_at END,
    j.rate_limited = CASE WHEN held THEN j.rate_limited + $rate_limited ELSE j.rate_limited END,
    j.error = CASE WHEN held AND $error <> '' THEN $error ELSE j.error END
REMOVE j._LOCK_
RETURN held
