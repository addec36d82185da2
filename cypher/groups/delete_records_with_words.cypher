// Erase step 1: delete the derived records that hold one person's words whoever their SOURCE is:
// those written FROM a message of the person, and those whose content quotes them ($quoted, found
// by graphmem.groups.quoting_records); each with every later state of its chain (an UPDATE may
// carry the words on). Earlier states stay; repair_chain_heads gives the chain its head back.
// Parameters: $group_id (str), $person_id (str), $quoted (list[str], record ids).
// Returns: ids (list[str], records deleted), segments (list[str], Segment ids that wrote them).
//   No row when the person does not exist.
MATCH (p:Person {group_id: $group_id, id: $person_id})
CALL (p) {
  OPTIONAL MATCH (d:Derived {group_id: $group_id})-[:FROM]->(:Message {group_id: $group_id})-[:SOURCE]->(p)
  RETURN collect(DISTINCT d) AS cited
}
CALL () {
  OPTIONAL MATCH (q:Derived {group_id: $group_id}) WHERE q.id IN $quoted
  RETURN collect(DISTINCT q) AS quoting
}
UNWIND (CASE WHEN size(cited + quoting) = 0 THEN [null] ELSE cited + quoting END) AS root
OPTIONAL MATCH (root)-[:SUPERSEDED_BY*0..]->(later:Derived)
WITH collect(DISTINCT later) AS doomed
WITH doomed, [d IN doomed | d.id] AS ids, [d IN doomed WHERE d.segment IS NOT NULL | d.segment] AS segments
FOREACH (d IN doomed | DETACH DELETE d)
RETURN ids, segments
