// Uniqueness of a Writer segment marker within its group (resume point of `graphmem derive`).
// Parameters: none. Returns nothing.
CREATE CONSTRAINT segment_id IF NOT EXISTS FOR (s:Segment) REQUIRE (s.group_id, s.id) IS UNIQUE
