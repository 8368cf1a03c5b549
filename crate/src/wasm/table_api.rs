//! The Tables view's and Search's calls into the core (`crate::table_query` over the stored
//! Parquet tables): sorted/filtered views, their rows by window, search over the timeline
//! tables' text. One view is kept at a time (the page shows one table), so the state is one
//! [`crate::table_query::View`]: at most [`crate::table_query::MAX_VIEW_ROWS`] u32 row numbers.

use std::cell::RefCell;

use wasm_bindgen::prelude::*;

use super::{js_err, strike_armed_fault, to_js, Session};
use crate::table_query::{self, Filter, View};

/// Most rows one `table_view_rows` call returns (the page asks for a screenful and a margin).
pub const MAX_WINDOW_ROWS: usize = 2000;
/// Most hits one `search` call returns (the earliest by start time; the total is counted).
pub const MAX_SEARCH_HITS: usize = 10_000;
/// Tables a search reads: the timeline's event tables (rows a hit can be revealed on).
const SEARCHED: [&str; 3] = ["Instruction", "DmaPacket", "SemaphoreUpdate"];

struct Kept {
    id: u32,
    key: String,
    table: String,
    view: View,
}

thread_local! {
    /// The one view kept (`table_view`), with the id the page refers to it by.
    static VIEW: RefCell<Option<Kept>> = const { RefCell::new(None) };
    static NEXT_ID: std::cell::Cell<u32> = const { std::cell::Cell::new(1) };
}

#[derive(serde::Deserialize)]
struct FilterIn {
    column: String,
    text: String,
}

#[wasm_bindgen]
impl Session {
    /// Builds the view of table `table` of profile `key` sorted by `sort` (a column; empty: table
    /// order; `desc`: descending, nulls last either way) and kept to the rows passing every
    /// filter of `filters` (`[{column, text}]`, text as typed: `>= 1000`, `< 5`, `= 3`, a number,
    /// or words a cell must contain, case-insensitive). Replaces the previous view. Returns
    /// `{id, rows, matched, table_rows, capped, max_rows}`: `rows` in the view (≤ `max_rows`,
    /// [`table_query::MAX_VIEW_ROWS`]), `matched` that passed the filters. Errors name the column
    /// and what was expected (a comparison on a text column, a missing column).
    pub fn table_view(
        &self,
        key: &str,
        table: &str,
        sort: String,
        desc: bool,
        filters: JsValue,
    ) -> std::result::Result<JsValue, JsError> {
        strike_armed_fault("table");
        let t = self.table(key, table)?;
        let text = js_sys::JSON::stringify(&filters)
            .map_err(|_| JsError::new("table_view: filters are not JSON"))?
            .as_string()
            .unwrap_or_else(|| "[]".into());
        let list: Vec<FilterIn> = if filters.is_undefined() || filters.is_null() {
            Vec::new()
        } else {
            serde_json::from_str(&text)
                .map_err(|e| JsError::new(&format!("table_view: filters {e}")))?
        };
        let parsed = list
            .iter()
            .filter(|f| !f.text.trim().is_empty())
            .map(|f| Filter::parse(&f.column, &f.text))
            .collect::<crate::error::Result<Vec<_>>>()
            .map_err(js_err)?;
        let sort = (!sort.is_empty()).then_some((sort.as_str(), desc));
        let view = table_query::build_view(t.data.clone(), sort, &parsed).map_err(js_err)?;
        let id = NEXT_ID.with(|n| {
            let id = n.get();
            n.set(id.wrapping_add(1).max(1));
            id
        });
        let out = serde_json::json!({
            "id": id,
            "rows": view.rows.len(),
            "matched": view.matched,
            "table_rows": view.table_rows,
            "capped": view.capped,
            "max_rows": table_query::MAX_VIEW_ROWS,
        });
        VIEW.with(|v| {
            *v.borrow_mut() = Some(Kept {
                id,
                key: key.to_string(),
                table: table.to_string(),
                view,
            })
        });
        to_js(&out)
    }
    /// Rows `offset .. offset + count` (count ≤ [`MAX_WINDOW_ROWS`]) of view `view` of table
    /// `table` of profile `key` (`view` 0: table order), every column plus `nscope_row` (the
    /// table row), as an Arrow IPC stream. Only the row groups holding them are read. Errors: `view`
    /// is not the kept view (a newer one replaced it, or the worker restarted).
    pub fn table_view_rows(
        &self,
        key: &str,
        table: &str,
        view: u32,
        offset: usize,
        count: usize,
    ) -> std::result::Result<Vec<u8>, JsError> {
        strike_armed_fault("table");
        let t = self.table(key, table)?;
        let count = count.min(MAX_WINDOW_ROWS);
        let rows: Vec<u32> = if view == 0 {
            let end = (offset as u64).saturating_add(count as u64).min(t.rows);
            (offset as u64..end).map(|r| r as u32).collect()
        } else {
            VIEW.with(|v| {
                let v = v.borrow();
                match v.as_ref() {
                    Some(k) if k.id == view && k.key == key && k.table == table => Ok(k
                        .view
                        .rows
                        .iter()
                        .skip(offset)
                        .take(count)
                        .copied()
                        .collect()),
                    // A restarted worker or a newer view: the page builds it again.
                    _ => Err(JsError::new(&format!(
                        "view {view} of {table} is no longer kept: build it again"
                    ))),
                }
            })?
        };
        let (schema, batches) = table_query::rows_of(t.data.clone(), &rows).map_err(js_err)?;
        crate::sink::ipc_of(&schema, &batches).map_err(js_err)
    }
    /// Where table row `row` is in view `view` (its position, for "show in table"), or -1 when the
    /// view does not hold it; `view` 0: the row itself.
    pub fn table_view_position(&self, view: u32, row: u32) -> f64 {
        if view == 0 {
            return f64::from(row);
        }
        VIEW.with(|v| {
            v.borrow()
                .as_ref()
                .filter(|k| k.id == view)
                .and_then(|k| k.view.rows.iter().position(|&r| r == row))
                .map_or(-1.0, |p| p as f64)
        })
    }
    /// Searches the text columns of profile `key`'s `Instruction`, `DmaPacket` and
    /// `SemaphoreUpdate` tables (opcode, BIR/HLO/framework names, NKI `file:line`, queue and
    /// semaphore names, …) for `query` (case-insensitive substring). Returns the serde of
    /// [`table_query::SearchResult`]: `{total, capped, hits: [{table, row, start, end, column,
    /// text}]}`, the `limit` (≤ [`MAX_SEARCH_HITS`]) earliest hits by start, times in table ns.
    pub fn search(
        &self,
        key: &str,
        query: &str,
        limit: usize,
    ) -> std::result::Result<JsValue, JsError> {
        let stored = self.profile(key)?;
        let tables = SEARCHED
            .iter()
            .filter_map(|&n| {
                let t = stored.get(n)?;
                Some((n, t.data.clone(), crate::lod::TimeCols::of(n)?))
            })
            .collect();
        let r = table_query::search(tables, query, limit.min(MAX_SEARCH_HITS)).map_err(js_err)?;
        to_js(&r)
    }
}
