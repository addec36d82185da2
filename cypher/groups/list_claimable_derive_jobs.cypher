// Open derive jobs a runner may claim, oldest first: those whose lease has run out (never
// started, or their runner stopped), and those held under a live lease, with the holder's
// process token, so that the caller can take over a holder whose process is gone
// (graphmem.core.process.owner_gone: killed with SIGKILL, say) instead of waiting for its lease.
// Parameters: $now (float, epoch seconds).
// Returns: id (str), group_id (str), runner (str, the holder or ""), owner (str or null, the
//   holder's process token), expired (bool, the lease has run out).
MATCH (j:DeriveJob)
WHERE j.state IN ['queued', 'running']
RETURN j.id AS id, j.group_id AS group_id, coalesce(j.runner, '') AS runner, j.owner AS owner,
       j.lease_until < $now AS expired
ORDER BY j.created_at
