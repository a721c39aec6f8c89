-- Tables of broker_auth_pgsql (SPEC §5.2, §5.3.5; EMQ X 3.x emqx_auth_pgsql).
-- psql -U <user> -d mqtt -f plugins/broker_auth_pgsql/schema.sql

CREATE TABLE IF NOT EXISTS mqtt_user (
  id SERIAL PRIMARY KEY,
  username varchar(100),
  password varchar(100),
  salt varchar(40),
  is_superuser boolean,
  UNIQUE (username)
);

CREATE TABLE IF NOT EXISTS mqtt_acl (
  id SERIAL PRIMARY KEY,
  allow integer,         -- 0: deny, 1: allow
  ipaddr varchar(60),    -- IP address or CIDR
  username varchar(100), -- user name; $all: every user
  clientid varchar(100),
  access integer,        -- 1: subscribe, 2: publish, 3: pubsub
  topic varchar(100)     -- topic filter; eq <topic>: exact match
);
