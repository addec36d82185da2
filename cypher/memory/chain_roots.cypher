// The first state (the ADD) of the chain of each given record: the key a record chain keeps
// while UPDATEs add states to it and late messages move positions (person memory pages are
// ordered by it).
// Parameters: $group_id (str); $ids (list[str], entry ids; unknown ids give no rows).
// Returns: id (str, as given), root (str, entry id of the chain's first state),
//   root_segment (str, id of the Writer segment that wrote that first state; "" when none).
UNWIND $ids AS rid
MATCH (d:Derived {group_id: $group_id, id: rid})
MATCH (root:Derived)-[:SUPERSEDED_BY*0..]->(d)
  WHERE NOT (:Derived)-[:SUPERSEDED_BY]->(root)
RETURN rid AS id, root.id AS root, coalesce(root.segment, '') AS root_segment
