// Uniqueness of Derived.id (the Writer's entry_id) within its group. Parameters: none.
CREATE CONSTRAINT derived_id IF NOT EXISTS FOR (d:Derived) REQUIRE (d.group_id, d.id) IS UNIQUE
