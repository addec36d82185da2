// The picture of one group's current memory: every head derived record drawn between who it
// came from (SOURCE) and whom it is about (OWNER: a person, or the Group node).
// Neo4j Browser: first  :param group_id => 'trail-trip'  then paste this query (graph view;
//   load docs/graphmem.grass for captions and layer colours).
// Parameters: $group_id (str, the group id).
// Returns, one row per head record ordered by turn_created then id: record (Derived node),
//   source (Person or Group node), owner (Person or Group node), id (str), layer (str),
//   utype (str), content (str), source_name (str), owner_name (str).
MATCH (d:Derived {group_id: $group_id, state: 'head'})-[:SOURCE]->(s)
MATCH (d)-[:OWNER]->(o)
RETURN d AS record, s AS source, o AS owner, d.id AS id, d.layer AS layer, d.utype AS utype,
       d.content AS content, s.name AS source_name, o.name AS owner_name
ORDER BY d.turn_created, id
