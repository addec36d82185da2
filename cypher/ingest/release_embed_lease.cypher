// Give up one group's embed lease if this run holds it (nothing changes otherwise).
// Parameters: $group_id (str); $runner (str, run id).
// Returns: released (bool); no row for an unknown group.
MATCH (g:Group {id: $group_id})
SET g._LOCK_ = true
WITH g, coalesce(g.embed_runner = $runner, false) AS mine
SET g.embed_runner = CASE WHEN mine THEN null ELSE g.embed_runner END,
    g.embed_lease_until = CASE WHEN mine THEN null ELSE g.embed_lease_until END,
    g.embed_owner = CASE WHEN mine THEN null ELSE g.embed_owner END
REMOVE g._LOCK_
RETURN mine AS released
