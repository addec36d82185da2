// Erase step 3: delete derived records of a group left without any supporting message
// (provenance is never empty; a record whose every FROM message was erased goes too).
// Parameters: $group_id (str).
// Returns: deleted (int), ids (list[str], their entry ids).
MATCH (d:Derived {group_id: $group_id})
WHERE NOT (d)-[:FROM]->(:Message)
WITH collect(d) AS doomed
WITH doomed, [d IN doomed | d.id] AS ids
FOREACH (d IN doomed | DETACH DELETE d)
RETURN size(doomed) AS deleted, ids
