// Count one erasure of a group (graphmem.groups.service.forget_person, when it erased anything):
// a derive that read the group before it (memory/lock_segment compares the count) writes
// nothing of what it read and plans its segments again.
// Parameters: $group_id (str).
// Returns (no row for an unknown group): erasures (int, the group's erasure count now).
MATCH (g:Group {id: $group_id})
SET g.erasures = coalesce(g.erasures, 0) + 1
RETURN g.erasures AS erasures
