-- TATP, the Telecom Application Transaction Processing benchmark (IBM/Nokia, "TATP Benchmark
-- Description" v1.0, 2009): its four tables (appendix A), its seven transactions' statements
-- (section 3) and the checks `dbduel check tatp` runs. PostgreSQL's SQL; the other dialects
-- override what differs. The spec's TINYINTs are smallint (PostgreSQL has no tinyint), its
-- CHARs varchar, as BenchBase's DDL has them; {plain} carries the table options.

-- name: drop
DROP TABLE IF EXISTS call_forwarding;
DROP TABLE IF EXISTS special_facility;
DROP TABLE IF EXISTS access_info;
DROP TABLE IF EXISTS subscriber;

-- name: create
CREATE TABLE subscriber (s_id integer NOT NULL, sub_nbr varchar(15) NOT NULL, bit_1 smallint, bit_2 smallint, bit_3 smallint, bit_4 smallint, bit_5 smallint, bit_6 smallint, bit_7 smallint, bit_8 smallint, bit_9 smallint, bit_10 smallint, hex_1 smallint, hex_2 smallint, hex_3 smallint, hex_4 smallint, hex_5 smallint, hex_6 smallint, hex_7 smallint, hex_8 smallint, hex_9 smallint, hex_10 smallint, byte2_1 smallint, byte2_2 smallint, byte2_3 smallint, byte2_4 smallint, byte2_5 smallint, byte2_6 smallint, byte2_7 smallint, byte2_8 smallint, byte2_9 smallint, byte2_10 smallint, msc_location integer, vlr_location integer){plain};
CREATE TABLE access_info (s_id integer NOT NULL, ai_type smallint NOT NULL, data1 smallint, data2 smallint, data3 varchar(3), data4 varchar(5)){plain};
CREATE TABLE special_facility (s_id integer NOT NULL, sf_type smallint NOT NULL, is_active smallint NOT NULL, error_cntrl smallint, data_a smallint, data_b varchar(5)){plain};
CREATE TABLE call_forwarding (s_id integer NOT NULL, sf_type smallint NOT NULL, start_time smallint NOT NULL, end_time smallint, numberx varchar(15)){plain};

-- name: keys
ALTER TABLE subscriber ADD PRIMARY KEY (s_id);
CREATE UNIQUE INDEX idx_subscriber_sub_nbr ON subscriber (sub_nbr);
ALTER TABLE access_info ADD PRIMARY KEY (s_id, ai_type);
ALTER TABLE special_facility ADD PRIMARY KEY (s_id, sf_type);
ALTER TABLE call_forwarding ADD PRIMARY KEY (s_id, sf_type, start_time);
ALTER TABLE access_info ADD FOREIGN KEY (s_id) REFERENCES subscriber (s_id);
ALTER TABLE special_facility ADD FOREIGN KEY (s_id) REFERENCES subscriber (s_id);
ALTER TABLE call_forwarding ADD FOREIGN KEY (s_id, sf_type) REFERENCES special_facility (s_id, sf_type);

-- name: analyze
VACUUM ANALYZE subscriber;
VACUUM ANALYZE access_info;
VACUUM ANALYZE special_facility;
VACUUM ANALYZE call_forwarding;

-- name: isolation_serializable
SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SERIALIZABLE;

-- name: get_subscriber_data
SELECT s_id, sub_nbr, bit_1, bit_2, bit_3, bit_4, bit_5, bit_6, bit_7, bit_8, bit_9, bit_10, hex_1, hex_2, hex_3, hex_4, hex_5, hex_6, hex_7, hex_8, hex_9, hex_10, byte2_1, byte2_2, byte2_3, byte2_4, byte2_5, byte2_6, byte2_7, byte2_8, byte2_9, byte2_10, msc_location, vlr_location FROM subscriber WHERE s_id = ?

-- name: get_new_destination
SELECT cf.numberx FROM special_facility sf, call_forwarding cf WHERE sf.s_id = ? AND sf.sf_type = ? AND sf.is_active = 1 AND cf.s_id = sf.s_id AND cf.sf_type = sf.sf_type AND cf.start_time <= ? AND ? < cf.end_time

-- name: get_access_data
SELECT data1, data2, data3, data4 FROM access_info WHERE s_id = ? AND ai_type = ?

-- name: update_subscriber_bit
UPDATE subscriber SET bit_1 = ? WHERE s_id = ?

-- name: update_special_facility
UPDATE special_facility SET data_a = ? WHERE s_id = ? AND sf_type = ?

-- name: update_location
UPDATE subscriber SET vlr_location = ? WHERE sub_nbr = ?

-- name: subscriber_by_number
SELECT s_id FROM subscriber WHERE sub_nbr = ?

-- name: facility_types
SELECT sf_type FROM special_facility WHERE s_id = ?

-- name: insert_call_forwarding
INSERT INTO call_forwarding (s_id, sf_type, start_time, end_time, numberx) VALUES (?, ?, ?, ?, ?)

-- name: delete_call_forwarding
DELETE FROM call_forwarding WHERE s_id = ? AND sf_type = ? AND start_time = ?

-- name: subscribers
SELECT max(s_id) FROM subscriber

-- name: subscriber_ids
SELECT count(*), COALESCE(min(s_id), 0), COALESCE(max(s_id), 0) FROM subscriber

-- name: bad_numbers
SELECT count(*) FROM subscriber WHERE char_length(sub_nbr) <> 15 OR CAST(sub_nbr AS bigint) <> s_id

-- name: counts
SELECT (SELECT count(*) FROM access_info), (SELECT count(*) FROM special_facility), (SELECT count(*) FROM call_forwarding)

-- name: out_of_range
SELECT (SELECT count(*) FROM access_info WHERE ai_type NOT BETWEEN 1 AND 4)
     + (SELECT count(*) FROM special_facility WHERE sf_type NOT BETWEEN 1 AND 4 OR is_active NOT IN (0, 1) OR data_a NOT BETWEEN 0 AND 255)
     + (SELECT count(*) FROM subscriber WHERE bit_1 NOT IN (0, 1))
     + (SELECT count(*) FROM call_forwarding WHERE sf_type NOT BETWEEN 1 AND 4 OR start_time NOT IN (0, 8, 16))

-- name: orphans
SELECT count(*) FROM call_forwarding cf WHERE NOT EXISTS (SELECT 1 FROM special_facility sf WHERE sf.s_id = cf.s_id AND sf.sf_type = cf.sf_type)

-- name: ledgers
SELECT name, fact FROM dbduel_facts WHERE name LIKE 'tatp.ledger.%'
