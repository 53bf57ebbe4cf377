-- Server-level statements: databases and the embedded server's settings. Read by
-- scoi/db/embedded.py alone. Braces are identifiers/literals psycopg.sql fills in (DDL takes
-- no parameters); %(name)s are parameters as everywhere else.

-- name: database_exists
SELECT count(*) > 0 FROM pg_database WHERE datname = %(name)s;

-- name: create_database
CREATE DATABASE {name};

-- name: create_database_from
CREATE DATABASE {name} TEMPLATE {template};

-- name: drop_database
DROP DATABASE IF EXISTS {name} WITH (FORCE);

-- name: current_settings
SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY(%(names)s::text[]);

-- name: alter_system
-- Written to postgresql.auto.conf; settings that need only a reload (reload_conf).
ALTER SYSTEM SET {name} = {value};

-- name: reload_conf
SELECT pg_reload_conf();
