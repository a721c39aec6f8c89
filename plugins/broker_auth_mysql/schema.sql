-- Tables of broker_auth_mysql (SPEC §5.2, §5.3.5; EMQ X 3.x emqx_auth_mysql).
-- mysql -u root -p mqtt < plugins/broker_auth_mysql/schema.sql

CREATE TABLE IF NOT EXISTS mqtt_user (
  id int(11) unsigned NOT NULL AUTO_INCREMENT,
  username varchar(100) DEFAULT NULL,
  password varchar(100) DEFAULT NULL,
  salt varchar(20) DEFAULT NULL,
  is_superuser tinyint(1) DEFAULT 0,
  created datetime DEFAULT NULL,
  PRIMARY KEY (id),
  UNIQUE KEY mqtt_username (username)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE IF NOT EXISTS mqtt_acl (
  id int(11) unsigned NOT NULL AUTO_INCREMENT,
  allow int(1) DEFAULT 1 COMMENT '0: deny, 1: allow',
  ipaddr varchar(60) DEFAULT NULL COMMENT 'IP address or CIDR',
  username varchar(100) DEFAULT NULL COMMENT 'user name; $all: every user',
  clientid varchar(100) DEFAULT NULL COMMENT 'client id',
  access int(2) NOT NULL COMMENT '1: subscribe, 2: publish, 3: pubsub',
  topic varchar(100) NOT NULL DEFAULT '' COMMENT 'topic filter; eq <topic>: exact match',
  PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
