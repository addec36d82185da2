// Uniqueness of Person.id within its group (a display name in two groups = two Persons).
// Parameters: none. Returns nothing.
CREATE CONSTRAINT person_id IF NOT EXISTS FOR (p:Person) REQUIRE (p.group_id, p.id) IS UNIQUE
