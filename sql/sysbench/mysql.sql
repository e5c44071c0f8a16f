-- MariaDB/MySQL: AUTO_INCREMENT ids (which move past loaded ids by themselves).

-- name: id_def
INTEGER NOT NULL AUTO_INCREMENT

-- name: after_load

-- MariaDB 10.3+ has sequences; MySQL has none (the sequence probe fails there, by name).
-- name: probe_sequence
SELECT NEXTVAL(dbduel_seq)

-- CHECK TABLE ... EXTENDED reads every row and every index entry (InnoDB, MyISAM, Aria); its
-- last row's Msg_text is "OK" when the table and its indexes agree.
-- name: index_check_setup

-- name: index_check
CHECK TABLE sbtest{n} EXTENDED
