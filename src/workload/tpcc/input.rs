//! The inputs of TPC-C's transactions as a terminal draws them (clauses 2.4.1 to 2.8.1: `Input`,
//! `Line`, `CustomerKey`), and the terminal's fixed home warehouse and district (`Terminal`): what
//! the client-side statements (txn.rs) and the server-side calls (procedures.rs) both take.

use super::DISTRICTS;

/// A terminal's fixed home: its warehouse, and the district its Stock-Level reads (clause
/// 2.8.1.1: "each terminal ... a fixed district"). Client i serves warehouse (i mod W) + 1, so
/// that the clients spread over all warehouses, and district ((i div W) mod 10) + 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Terminal {
    pub w_id: i64,
    pub d_id: i64,
}

impl Terminal {
    pub fn bind(client_id: u32, warehouses: u32) -> Terminal {
        let w = warehouses.max(1);
        Terminal {
            w_id: i64::from(client_id % w) + 1,
            d_id: i64::from(client_id / w) % DISTRICTS + 1,
        }
    }
}

/// One line of a New-Order: the item, the warehouse that supplies it, the quantity.
pub struct Line {
    pub i_id: i64,
    pub supply_w: i64,
    pub quantity: i64,
}

/// The customer of a Payment or Order-Status: by number, or by last name (clauses 2.5.1.2,
/// 2.6.1.2).
pub enum CustomerKey {
    Id(i64),
    LastName(String),
}

/// The input a terminal draws for one transaction (clauses 2.4.1, 2.5.1, 2.6.1, 2.7.1, 2.8.1).
pub enum Input {
    NewOrder {
        d_id: i64,
        c_id: i64,
        lines: Vec<Line>,
        all_local: bool,
    },
    Payment {
        d_id: i64,
        c_w_id: i64,
        c_d_id: i64,
        customer: CustomerKey,
        amount: f64,
    },
    OrderStatus {
        d_id: i64,
        customer: CustomerKey,
    },
    Delivery {
        carrier: i64,
    },
    StockLevel {
        threshold: i64,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminals_cover_every_warehouse_and_district() {
        assert_eq!(Terminal::bind(0, 4), Terminal { w_id: 1, d_id: 1 });
        assert_eq!(Terminal::bind(5, 4), Terminal { w_id: 2, d_id: 2 });
        let homes: std::collections::BTreeSet<_> = (0..40)
            .map(|i| Terminal::bind(i, 4))
            .map(|t| (t.w_id, t.d_id))
            .collect();
        assert_eq!(homes.len(), 40);
    }
}
