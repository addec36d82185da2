// Take or renew one group's embed lease (graphmem.verbatim.vectors.embed_group): allowed when no run
// holds it, its lease has run out (a run that died leaves it to expire), or this run holds it.
// The Group node is locked first (SET before reading), so two runs never both hold it.
// Parameters: $group_id (str); $runner (str, run id); $now (float, epoch seconds);
//   $lease_until (float, epoch seconds).
// Returns (no row for an unknown group): claimed (bool), runner (str, the holder now),
//   lease_until (float, epoch seconds).
MATCH (g:Group {id: $group_id})
SET g._LOCK_ = true
WITH g, g.embed_runner IS NULL OR g.embed_lease_until < $now OR g.embed_runner = $runner AS ok
SET g.embed_runner = CASE WHEN ok THEN $runner ELSE g.embed_runner END,
    g.embed_lease_until = CASE WHEN ok THEN $lease_until ELSE g.embed_lease_until END
REMOVE g._LOCK_
RETURN ok AS claimed, g.embed_runner AS runner, g.embed_lease_until AS lease_until
