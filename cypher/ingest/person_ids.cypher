// The ids of a group's persons: what a display name of an input is matched against
// (graphmem.verbatim.ingest.person_ids: a name joins the person of its identity form).
// Parameters: $group_id (str).
// Returns: id (str), one row per Person of the group.
MATCH (p:Person {group_id: $group_id})
RETURN p.id AS id
