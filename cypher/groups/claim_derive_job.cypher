// Claim an open derive job for one runner: allowed when its lease has run out (a runner that
// died, or a server that restarted, leaves it to expire), this runner already holds it, or its
// holder is $take_from (a runner whose process is gone: graphmem.core.process.owner_gone).
// The job node is locked first (SET before reading), so two runners never both claim it.
// Parameters: $job_id (str); $runner (str, runner id); $owner (str, the runner's process token,
//   graphmem.core.process.owner_token); $take_from (str or null, a dead holder's runner id);
//   $now (float, epoch seconds); $lease_until (float, epoch seconds); $now_iso (str, ISO-8601 UTC).
// Returns (no row for an unknown job): claimed (bool), group_id (str), state (str), runs (int).
MATCH (j:DeriveJob {id: $job_id})
SET j._LOCK_ = true
WITH j, j.state IN ['queued', 'running']
        AND (j.lease_until < $now OR j.runner = $runner OR ($take_from IS NOT NULL AND j.runner = $take_from)) AS ok,
     j.runner = $runner AS mine
SET j.state = CASE WHEN ok THEN 'running' ELSE j.state END,
    j.runner = CASE WHEN ok THEN $runner ELSE j.runner END,
    j.owner = CASE WHEN ok THEN $owner ELSE j.owner END,
    j.lease_until = CASE WHEN ok THEN $lease_until ELSE j.lease_until END,
    j.runs = CASE WHEN ok AND NOT mine THEN j.runs + 1 ELSE j.runs END,
    j.updated_at = CASE WHEN ok THEN $now_iso ELSE j.updated_at END
REMOVE j._LOCK_
RETURN ok AS claimed, j.group_id AS group_id, j.state AS state, j.runs AS runs
