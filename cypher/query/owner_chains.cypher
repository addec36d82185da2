// Derived-record chains owned by the given rows of one group, every version oldest -> newest,
// each version with its cosine similarity to the issue (exact: the owner's records are scanned).
// A chain is found through its head (state 'head'); its versions are the nodes that reach the
// head along SUPERSEDED_BY.
// Parameters: $group_id (str); $person_ids (list[str], Person owners); $include_group (bool, also
//   the chains the Group node owns); $vector (list[float], L2-normed issue embedding, or null:
//   every cosine is then 0.0); $max_instant (float epoch seconds, or null): as-of limit, FROM
//   messages stamped later are left out of from_ids.
// Returns: owner_kind ("person" | "group"), owner_id (str), owner_name (str), head_id (str),
//   versions (list of maps, oldest first: id, content, layer, utype, ts, instant (float epoch
//   seconds or null), session, turn_created,
//   confidence, state, source_kind, source_id, source_name, from_ids (list[str], conversation order),
//   cosine (float in [-1, 1]: Neo4j's similarity (1 + cos) / 2 mapped back to the cosine;
//   0.0 when the version has no embedding)).
MATCH (h:Derived {group_id: $group_id, state: 'head'})-[:OWNER]->(o)
WHERE (o:Person AND o.group_id = $group_id AND o.id IN $person_ids)
   OR (o:Group AND o.id = $group_id AND $include_group)
CALL (h) {
  MATCH path = (v:Derived)-[:SUPERSEDED_BY*0..]->(h)
  WHERE v.group_id = $group_id
  OPTIONAL MATCH (v)-[:SOURCE]->(s)
  CALL (v) {
    OPTIONAL MATCH (v)-[:FROM]->(m:Message)
    WHERE $max_instant IS NULL OR m.instant <= $max_instant
    WITH m ORDER BY m.turn_created
    RETURN collect(m.id) AS from_ids
  }
  WITH v, s, from_ids, length(path) AS back
  ORDER BY back DESC, v.turn_created
  RETURN collect({
    id: v.id, content: v.content, layer: v.layer, utype: v.utype, ts: v.ts, instant: v.instant,
    session: v.session,
    turn_created: v.turn_created, confidence: v.confidence, state: v.state,
    source_kind: CASE WHEN s:Group THEN 'group' WHEN s:Person THEN 'person' ELSE '' END,
    source_id: coalesce(s.id, ''), source_name: coalesce(s.name, s.id, ''),
    from_ids: from_ids,
    cosine: CASE WHEN v.embedding IS NULL OR $vector IS NULL THEN 0.0
                 ELSE 2 * vector.similarity.cosine(v.embedding, $vector) - 1 END
  }) AS versions
}
RETURN CASE WHEN o:Group THEN 'group' ELSE 'person' END AS owner_kind, o.id AS owner_id,
       coalesce(o.name, o.id) AS owner_name, h.id AS head_id, versions
