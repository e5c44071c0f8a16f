-- SQLite: ALTER TABLE cannot add keys, so they are declared at creation (the subscriber's
-- INTEGER PRIMARY KEY is the rowid); its transactions are serializable already; length instead of
-- char_length.

-- name: create
CREATE TABLE subscriber (s_id INTEGER PRIMARY KEY, sub_nbr varchar(15) NOT NULL, bit_1 smallint, bit_2 smallint, bit_3 smallint, bit_4 smallint, bit_5 smallint, bit_6 smallint, bit_7 smallint, bit_8 smallint, bit_9 smallint, bit_10 smallint, hex_1 smallint, hex_2 smallint, hex_3 smallint, hex_4 smallint, hex_5 smallint, hex_6 smallint, hex_7 smallint, hex_8 smallint, hex_9 smallint, hex_10 smallint, byte2_1 smallint, byte2_2 smallint, byte2_3 smallint, byte2_4 smallint, byte2_5 smallint, byte2_6 smallint, byte2_7 smallint, byte2_8 smallint, byte2_9 smallint, byte2_10 smallint, msc_location integer, vlr_location integer);
CREATE TABLE access_info (s_id integer NOT NULL REFERENCES subscriber (s_id), ai_type smallint NOT NULL, data1 smallint, data2 smallint, data3 varchar(3), data4 varchar(5), PRIMARY KEY (s_id, ai_type));
CREATE TABLE special_facility (s_id integer NOT NULL REFERENCES subscriber (s_id), sf_type smallint NOT NULL, is_active smallint NOT NULL, error_cntrl smallint, data_a smallint, data_b varchar(5), PRIMARY KEY (s_id, sf_type));
CREATE TABLE call_forwarding (s_id integer NOT NULL, sf_type smallint NOT NULL, start_time smallint NOT NULL, end_time smallint, numberx varchar(15), PRIMARY KEY (s_id, sf_type, start_time), FOREIGN KEY (s_id, sf_type) REFERENCES special_facility (s_id, sf_type));

-- name: keys
CREATE UNIQUE INDEX idx_subscriber_sub_nbr ON subscriber (sub_nbr);

-- name: analyze
ANALYZE;

-- name: isolation_serializable
-- SQLite's transactions are serializable already.

-- name: bad_numbers
SELECT count(*) FROM subscriber WHERE length(sub_nbr) <> 15 OR CAST(sub_nbr AS INTEGER) <> s_id
