// The vectors of a group's messages of several sentences (graphmem.recall.cache fills its
// sentence matrix): each message's own vector and its sentences' (one after another).
// Parameters: $group_id (str).
// Returns: id (str), embedding (list[float]), sentence_embeddings (list[float], k x the
//   embedding's length), turn_created (int), instant (float epoch seconds or null),
//   session (str), person_id (str or null).
MATCH (m:Message {group_id: $group_id})
WHERE m.sentence_embeddings IS NOT NULL AND m.embedding IS NOT NULL
RETURN m.id AS id, m.embedding AS embedding, m.sentence_embeddings AS sentence_embeddings,
       m.turn_created AS turn_created, m.instant AS instant, m.session AS session,
       [(m)-[:SOURCE]->(p:Person) | p.id][0] AS person_id
