// Write re-computed vectors of derived records (graphmem embed --rebuild), stored as
// create_records stores them (a float32 vector property).
// Parameters: $group_id (str), $rows (list of {id: str, embedding: list of float}).
// Returns: written (int).
UNWIND $rows AS row
MATCH (d:Derived {group_id: $group_id, id: row.id})
CALL db.create.setNodeVectorProperty(d, 'embedding', row.embedding)
RETURN count(d) AS written
