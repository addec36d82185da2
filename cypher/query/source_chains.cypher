// Derived-record chains whose head has one of the given persons as SOURCE but another OWNER
// (what the person said or observed about someone else, or about the group): the source
// supplement of a person's row. Versions as in query/owner_chains.
// Parameters: $group_id (str); $person_ids (list[str], source persons);
//   $vector (list[float], L2-normed issue embedding, or null: every cosine is then 0.0);
//   $max_instant (float epoch seconds, or null): as-of limit, as in query/owner_chains.
// Returns: row_id (str, the source person), owner_kind ("person" | "group"), owner_id (str),
//   owner_name (str), head_id (str), versions (list of maps, oldest first, same keys as
//   query/owner_chains).
MATCH (h:Derived {group_id: $group_id, state: 'head'})-[:SOURCE]->(src:Person {group_id: $group_id})
WHERE src.id IN $person_ids
MATCH (h)-[:OWNER]->(o)
WHERE NOT (o:Person AND o.id = src.id)
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
RETURN src.id AS row_id, CASE WHEN o:Group THEN 'group' ELSE 'person' END AS owner_kind,
       o.id AS owner_id, coalesce(o.name, o.id) AS owner_name, h.id AS head_id, versions
