// Take or renew one group's embed lease (graphmem.verbatim.vectors.embed_group): allowed when no run
// holds it, its lease has run out (a run that died elsewhere leaves it to expire), this run holds
// it, or the holder is $take_from (a run whose process is gone: graphmem.core.process.owner_gone).
// The Group node is locked first (SET before reading), so two runs never both hold it.
// Parameters: $group_id (str); $runner (str, run id); $owner (str, the run's process token);
//   $now (float, epoch seconds); $lease_until (float, epoch seconds); $take_from (str or null).
// Returns (no row for an unknown group, or one being erased: groups/fence_group): claimed (bool), runner (str, the holder now),
//   owner (str or null, the holder's process token), lease_until (float, epoch seconds).
MATCH (g:Group {id: $group_id}) WHERE g.erasing IS NULL
SET g._LOCK_ = true
WITH g, g.embed_runner IS NULL OR g.embed_lease_until < $now OR g.embed_runner = $runner
        OR ($take_from IS NOT NULL AND g.embed_runner = $take_from) AS ok
SET g.embed_runner = CASE WHEN ok THEN $runner ELSE g.embed_runner END,
    g.embed_owner = CASE WHEN ok THEN $owner ELSE g.embed_owner END,
    g.embed_lease_until = CASE WHEN ok THEN $lease_until ELSE g.embed_lease_until END
REMOVE g._LOCK_
RETURN ok AS claimed, g.embed_runner AS runner, g.embed_owner AS owner, g.embed_lease_until AS lease_until
