// Erase, read first: id and content of every derived record (all versions) of a group, to find
// those that quote an erased person's words (graphmem.groups.quoting_records).
// Parameters: $group_id (str).
// Returns one row per record: id (str), content (str).
MATCH (d:Derived {group_id: $group_id})
RETURN d.id AS id, d.content AS content
