-- MariaDB/MySQL: primary keys declared at creation (InnoDB clusters rows by primary key, so
-- adding it after loading would rebuild the table); ANALYZE TABLE instead of VACUUM; TINYINT as
-- the spec has it. Foreign keys are declared, and kept by InnoDB only (MyISAM and Aria ignore
-- them: `check tatp` looks for orphans on every engine).

-- name: create
CREATE TABLE subscriber (s_id integer NOT NULL PRIMARY KEY, sub_nbr varchar(15) NOT NULL, bit_1 tinyint, bit_2 tinyint, bit_3 tinyint, bit_4 tinyint, bit_5 tinyint, bit_6 tinyint, bit_7 tinyint, bit_8 tinyint, bit_9 tinyint, bit_10 tinyint, hex_1 tinyint, hex_2 tinyint, hex_3 tinyint, hex_4 tinyint, hex_5 tinyint, hex_6 tinyint, hex_7 tinyint, hex_8 tinyint, hex_9 tinyint, hex_10 tinyint, byte2_1 smallint, byte2_2 smallint, byte2_3 smallint, byte2_4 smallint, byte2_5 smallint, byte2_6 smallint, byte2_7 smallint, byte2_8 smallint, byte2_9 smallint, byte2_10 smallint, msc_location integer, vlr_location integer){plain};
CREATE TABLE access_info (s_id integer NOT NULL, ai_type tinyint NOT NULL, data1 smallint, data2 smallint, data3 varchar(3), data4 varchar(5), PRIMARY KEY (s_id, ai_type)){plain};
CREATE TABLE special_facility (s_id integer NOT NULL, sf_type tinyint NOT NULL, is_active tinyint NOT NULL, error_cntrl smallint, data_a smallint, data_b varchar(5), PRIMARY KEY (s_id, sf_type)){plain};
CREATE TABLE call_forwarding (s_id integer NOT NULL, sf_type tinyint NOT NULL, start_time tinyint NOT NULL, end_time tinyint, numberx varchar(15), PRIMARY KEY (s_id, sf_type, start_time)){plain};

-- name: keys
CREATE UNIQUE INDEX idx_subscriber_sub_nbr ON subscriber (sub_nbr);
ALTER TABLE access_info ADD FOREIGN KEY (s_id) REFERENCES subscriber (s_id);
ALTER TABLE special_facility ADD FOREIGN KEY (s_id) REFERENCES subscriber (s_id);
ALTER TABLE call_forwarding ADD FOREIGN KEY (s_id, sf_type) REFERENCES special_facility (s_id, sf_type);

-- name: analyze
ANALYZE TABLE subscriber, access_info, special_facility, call_forwarding;

-- name: isolation_serializable
SET SESSION TRANSACTION ISOLATION LEVEL SERIALIZABLE;

-- name: bad_numbers
SELECT count(*) FROM subscriber WHERE char_length(sub_nbr) <> 15 OR CAST(sub_nbr AS SIGNED) <> s_id
