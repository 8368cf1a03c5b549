//! Sorting, filtering and searching stored tables: the page's Tables view and Search
//! (`Session.table_view`, `table_view_rows`, `search` in `wasm/table_api.rs`).
//!
//! Everything reads a stored Parquet table through a [`ChunkReader`], one row group at a time
//! and only the columns it needs, so the state is bounded by the caps below, not by the table:
//! a view is at most [`MAX_VIEW_ROWS`] row numbers (u32, 16 MiB), a search at most the
//! `limit` earliest matches asked for. Row numbers are the table's own (0-based, the order the
//! rows were written), the same numbers `nscope_row` carries in `lod::window_rows`.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReaderBuilder, RowSelection, RowSelector};
use parquet::arrow::ProjectionMask;
use parquet::file::reader::ChunkReader;

use crate::error::{Error, Result};
use crate::tables::StrCol;

/// Most rows a sorted or filtered view keeps (4 Mi: 16 MiB of u32 row numbers; a sort holds a
/// 16-byte key per kept row while it runs, 64 MiB at most). Past it a filter keeps the first
/// matches in table order and a sort the first rows of the sorted order (a top-k heap), and
/// [`View::capped`] is set so the page says so.
pub const MAX_VIEW_ROWS: usize = 4 << 20;

/// Most distinct strings (summed bytes) a sort on a text column ranks: 32 MiB. The event tables'
/// text columns are dictionary-like (engines, opcodes, names per compiler pc), far below it.
pub const MAX_SORT_TEXT_BYTES: usize = 32 << 20;

/// A comparison of a numeric filter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cmp {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `=`
    Eq,
    /// `!=`
    Ne,
}

/// What a column filter keeps.
#[derive(Clone, Debug, PartialEq)]
pub enum FilterOp {
    /// The cell's text contains this (lower-cased; case-insensitive).
    Contains(String),
    /// The cell's number compares so with this value (numeric columns only).
    Num(Cmp, f64),
}

/// One column filter: rows whose `column` passes `op` (nulls never pass).
#[derive(Clone, Debug, PartialEq)]
pub struct Filter {
    /// Column name.
    pub column: String,
    /// The test.
    pub op: FilterOp,
}

impl Filter {
    /// Parses the text a user typed into a column's filter box: `>= 1000`, `<5`, `= 3`, `!=0`
    /// (a comparison, numeric columns), a bare number (equality on a numeric column), anything
    /// else a case-insensitive "contains". Errors: a comparison whose value is not a number.
    pub fn parse(column: &str, text: &str) -> Result<Filter> {
        let t = text.trim();
        let ops: [(&str, Cmp); 7] = [
            (">=", Cmp::Ge),
            ("<=", Cmp::Le),
            ("!=", Cmp::Ne),
            ("==", Cmp::Eq),
            (">", Cmp::Gt),
            ("<", Cmp::Lt),
            ("=", Cmp::Eq),
        ];
        for (p, c) in ops {
            if let Some(rest) = t.strip_prefix(p) {
                let v: f64 = rest.trim().replace(['_', ','], "").parse().map_err(|_| {
                    Error::Other(format!(
                        "filter on {column}: {:?} after {p} is not a number",
                        rest.trim()
                    ))
                })?;
                return Ok(Filter {
                    column: column.to_string(),
                    op: FilterOp::Num(c, v),
                });
            }
        }
        Ok(Filter {
            column: column.to_string(),
            op: FilterOp::Contains(t.to_lowercase()),
        })
    }
}

/// A sorted and/or filtered view of a table: the table rows in view order.
#[derive(Clone, Debug, Default)]
pub struct View {
    /// Table row numbers in view order (at most [`MAX_VIEW_ROWS`]).
    pub rows: Vec<u32>,
    /// Rows of the table.
    pub table_rows: u64,
    /// Rows that passed the filters (may exceed `rows.len()` when capped).
    pub matched: u64,
    /// More rows matched than a view keeps.
    pub capped: bool,
}

/// A sort key: nulls after every value in either direction, then the value, then the row.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Key {
    null: bool,
    v: i64,
    row: u32,
}

/// Keys ordered as the view shows them (`desc` reverses values only; rows stay ascending).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Ordered {
    k: Key,
    desc: bool,
}

impl Ord for Ordered {
    fn cmp(&self, o: &Self) -> Ordering {
        let (a, b) = (self.k, o.k);
        a.null
            .cmp(&b.null)
            .then_with(|| {
                if self.desc {
                    b.v.cmp(&a.v)
                } else {
                    a.v.cmp(&b.v)
                }
            })
            .then(a.row.cmp(&b.row))
    }
}
impl PartialOrd for Ordered {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

/// A float as an i64 with the same order (IEEE total order: -0 < +0, NaN last).
fn float_key(f: f64) -> i64 {
    let b = f.to_bits() as i64;
    b ^ ((((b >> 63) as u64) >> 1) as i64)
}

/// Cell `i` of a numeric column as (sort key, value as f64 for filters); `None` when null or
/// not numeric.
fn num_at(a: &dyn Array, i: usize) -> Option<(i64, f64)> {
    use arrow_array::types::*;
    if a.is_null(i) {
        return None;
    }
    macro_rules! int {
        ($t:ty) => {{
            let v = a.as_primitive::<$t>().value(i);
            Some((i64::try_from(v).unwrap_or(i64::MAX), v as f64))
        }};
    }
    match a.data_type() {
        DataType::Int8 => int!(Int8Type),
        DataType::Int16 => int!(Int16Type),
        DataType::Int32 => int!(Int32Type),
        DataType::Int64 => int!(Int64Type),
        DataType::UInt8 => int!(UInt8Type),
        DataType::UInt16 => int!(UInt16Type),
        DataType::UInt32 => int!(UInt32Type),
        DataType::UInt64 => int!(UInt64Type),
        DataType::Float32 => {
            let v = f64::from(a.as_primitive::<Float32Type>().value(i));
            Some((float_key(v), v))
        }
        DataType::Float64 => {
            let v = a.as_primitive::<Float64Type>().value(i);
            Some((float_key(v), v))
        }
        DataType::Boolean => {
            let v = i64::from(a.as_boolean().value(i));
            Some((v, v as f64))
        }
        _ => None,
    }
}

fn is_text(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8)
        || matches!(t, DataType::Dictionary(_, v) if matches!(**v, DataType::Utf8 | DataType::LargeUtf8))
}

/// Cell `i` as text for "contains" (numbers in decimal, as the page shows them).
fn text_at<'a>(
    s: Option<&StrCol<'a>>,
    a: &dyn Array,
    i: usize,
) -> Option<std::borrow::Cow<'a, str>> {
    if let Some(s) = s {
        return s.get(i).map(std::borrow::Cow::Borrowed);
    }
    if a.is_null(i) {
        return None;
    }
    match a.data_type() {
        DataType::Float32 | DataType::Float64 => num_at(a, i).map(|(_, v)| v.to_string().into()),
        DataType::Boolean => Some(a.as_boolean().value(i).to_string().into()),
        _ => num_at(a, i).map(|(k, _)| k.to_string().into()),
    }
}

fn cmp_ok(c: Cmp, v: f64, x: f64) -> bool {
    match c {
        Cmp::Lt => v < x,
        Cmp::Le => v <= x,
        Cmp::Gt => v > x,
        Cmp::Ge => v >= x,
        Cmp::Eq => v == x,
        Cmp::Ne => v != x,
    }
}

/// The filters as a per-row test over one batch: `ok[i]` is true when row `i` passes all.
fn pass_mask(batch: &RecordBatch, filters: &[Filter]) -> Result<Vec<bool>> {
    let n = batch.num_rows();
    let mut ok = vec![true; n];
    for f in filters {
        let a = batch
            .column_by_name(&f.column)
            .ok_or_else(|| Error::Other(format!("filter: the table has no column {}", f.column)))?;
        let s = StrCol::of(a.as_ref());
        match &f.op {
            FilterOp::Contains(q) => {
                // Dictionary columns: each distinct value is tested once per batch.
                if let Some(StrCol::Dict(keys, values)) = &s {
                    let hit: Vec<bool> = (0..values.len())
                        .map(|j| {
                            values.is_valid(j)
                                && values.value(j).to_lowercase().contains(q.as_str())
                        })
                        .collect();
                    for (i, o) in ok.iter_mut().enumerate() {
                        *o = *o
                            && keys.is_valid(i)
                            && usize::try_from(keys.value(i))
                                .ok()
                                .and_then(|k| hit.get(k).copied())
                                .unwrap_or(false);
                    }
                    continue;
                }
                for (i, o) in ok.iter_mut().enumerate() {
                    if *o {
                        *o = text_at(s.as_ref(), a.as_ref(), i)
                            .is_some_and(|t| t.to_lowercase().contains(q.as_str()));
                    }
                }
            }
            FilterOp::Num(c, x) => {
                if is_text(a.data_type()) {
                    return Err(Error::Other(format!(
                        "filter on {}: a comparison needs a numeric column (this one holds text: type words to match)",
                        f.column
                    )));
                }
                for (i, o) in ok.iter_mut().enumerate() {
                    if *o {
                        *o = num_at(a.as_ref(), i).is_some_and(|(_, v)| cmp_ok(*c, v, *x));
                    }
                }
            }
        }
    }
    Ok(ok)
}

/// A reader of `columns` of `reader` (absent names are an error naming them).
fn projected<R: ChunkReader + 'static>(
    reader: R,
    columns: &[&str],
) -> Result<parquet::arrow::arrow_reader::ParquetRecordBatchReader> {
    let b = ParquetRecordBatchReaderBuilder::try_new(reader)?;
    let schema = b.schema().clone();
    let mut idx = Vec::new();
    for c in columns {
        idx.push(
            schema
                .index_of(c)
                .map_err(|_| Error::Other(format!("the table has no column {c}")))?,
        );
    }
    idx.sort_unstable();
    idx.dedup();
    let mask = ProjectionMask::roots(b.parquet_schema(), idx);
    Ok(b.with_projection(mask)
        .with_batch_size(crate::tables::BATCH_ROWS)
        .build()?)
}

/// Ranks of the distinct strings of text column `col` (first pass of a text sort).
fn text_ranks<R: ChunkReader + 'static>(reader: R, col: &str) -> Result<HashMap<String, i64>> {
    let mut distinct: HashMap<String, i64> = HashMap::new();
    let mut bytes = 0usize;
    for batch in projected(reader, &[col])? {
        let batch = batch?;
        let a = batch.column(0);
        let s = StrCol::of(a.as_ref())
            .ok_or_else(|| Error::Other(format!("sort: {col} is not text")))?;
        for i in 0..s.len() {
            if let Some(v) = s.get(i) {
                if !distinct.contains_key(v) {
                    bytes += v.len() + 32;
                    if bytes > MAX_SORT_TEXT_BYTES {
                        return Err(Error::Other(format!(
                            "sort: {col} has more distinct text than a sort ranks ({} MiB); filter first",
                            MAX_SORT_TEXT_BYTES >> 20
                        )));
                    }
                    distinct.insert(v.to_string(), 0);
                }
            }
        }
    }
    let mut all: Vec<&String> = distinct.keys().collect();
    all.sort_unstable();
    let ranks: HashMap<String, i64> = all
        .into_iter()
        .enumerate()
        .map(|(r, s)| (s.clone(), r as i64))
        .collect();
    Ok(ranks)
}

/// Builds the view of Parquet table `reader` that keeps the rows passing every filter, in table
/// order or sorted by `sort` (`(column, descending)`; nulls last, ties in table order). Reads
/// only the filter and sort columns, batch by batch (a text sort reads its column twice: once to
/// rank the distinct values). Errors: a missing column, a comparison on a text column, a text
/// column with more than [`MAX_SORT_TEXT_BYTES`] of distinct values, a table of more than
/// 2^32 rows, a failed read.
pub fn build_view<R: ChunkReader + Clone + 'static>(
    reader: R,
    sort: Option<(&str, bool)>,
    filters: &[Filter],
) -> Result<View> {
    let table_rows = ParquetRecordBatchReaderBuilder::try_new(reader.clone())?
        .metadata()
        .file_metadata()
        .num_rows()
        .max(0) as u64;
    if table_rows > u64::from(u32::MAX) {
        return Err(Error::Other(format!(
            "the table has {table_rows} rows: views number rows in 32 bits"
        )));
    }
    let sort_schema_type = match sort {
        Some((c, _)) => {
            let b = ParquetRecordBatchReaderBuilder::try_new(reader.clone())?;
            let f = b
                .schema()
                .field_with_name(c)
                .map_err(|_| Error::Other(format!("sort: the table has no column {c}")))?
                .data_type()
                .clone();
            Some(f)
        }
        None => None,
    };
    let ranks = match (sort, &sort_schema_type) {
        (Some((c, _)), Some(t)) if is_text(t) => Some(text_ranks(reader.clone(), c)?),
        _ => None,
    };
    let mut cols: Vec<&str> = filters.iter().map(|f| f.column.as_str()).collect();
    if let Some((c, _)) = sort {
        cols.push(c);
    }
    let mut view = View {
        table_rows,
        ..View::default()
    };
    if cols.is_empty() {
        // Neither sort nor filter: the identity, capped like any view.
        let n = table_rows.min(MAX_VIEW_ROWS as u64) as u32;
        view.rows = (0..n).collect();
        view.matched = table_rows;
        view.capped = table_rows > u64::from(n);
        return Ok(view);
    }
    let desc = sort.is_some_and(|s| s.1);
    let mut keys: Vec<Key> = Vec::new();
    let mut heap: BinaryHeap<Ordered> = BinaryHeap::new();
    let mut row = 0u32;
    for batch in projected(reader, &cols)? {
        let batch = batch?;
        let ok = pass_mask(&batch, filters)?;
        let sort_col = sort.and_then(|(c, _)| batch.column_by_name(c)).cloned();
        let sort_str = sort_col.as_ref().and_then(|a| StrCol::of(a.as_ref()));
        for (i, pass) in ok.iter().enumerate() {
            let r = row + i as u32;
            if !*pass {
                continue;
            }
            view.matched += 1;
            let Some(a) = &sort_col else {
                if view.rows.len() < MAX_VIEW_ROWS {
                    view.rows.push(r);
                } else {
                    view.capped = true;
                }
                continue;
            };
            let (null, v) = match (&ranks, &sort_str) {
                (Some(rk), Some(s)) => match s.get(i) {
                    Some(t) => (false, rk.get(t).copied().unwrap_or(0)),
                    None => (true, 0),
                },
                _ => match num_at(a.as_ref(), i) {
                    Some((k, _)) => (false, k),
                    None => (true, 0),
                },
            };
            let k = Key { null, v, row: r };
            if heap.is_empty() && keys.len() < MAX_VIEW_ROWS {
                keys.push(k);
                continue;
            }
            if heap.is_empty() {
                // Over the cap: keep the best MAX_VIEW_ROWS in a max-heap (its top the worst kept).
                heap = keys
                    .drain(..)
                    .map(|k| Ordered { k, desc })
                    .collect::<BinaryHeap<_>>();
                view.capped = true;
            }
            let o = Ordered { k, desc };
            if heap.peek().is_some_and(|w| o < *w) {
                heap.pop();
                heap.push(o);
            }
        }
        row += batch.num_rows() as u32;
    }
    if sort.is_some() {
        let mut all: Vec<Ordered> = if heap.is_empty() {
            keys.into_iter().map(|k| Ordered { k, desc }).collect()
        } else {
            heap.into_vec()
        };
        all.sort_unstable();
        view.rows = all.into_iter().map(|o| o.k.row).collect();
    }
    Ok(view)
}

/// Rows `rows` (table row numbers, any order, each < the table's rows) of Parquet table
/// `reader`, every column plus `nscope_row` (u64: the table row), in the order given. Only the
/// row groups holding them are read, through a row selection. Errors: a row past the end, a
/// failed read.
pub fn rows_of<R: ChunkReader + 'static>(
    reader: R,
    rows: &[u32],
) -> Result<(arrow_schema::SchemaRef, Vec<RecordBatch>)> {
    let b = ParquetRecordBatchReaderBuilder::try_new(reader)?;
    let schema = b.schema().clone();
    let md = b.metadata().clone();
    let out_schema = std::sync::Arc::new(arrow_schema::Schema::new_with_metadata(
        schema
            .fields()
            .iter()
            .cloned()
            .chain(std::iter::once(std::sync::Arc::new(
                arrow_schema::Field::new("nscope_row", DataType::UInt64, false),
            )))
            .collect::<Vec<_>>(),
        schema.metadata().clone(),
    ));
    if rows.is_empty() {
        return Ok((out_schema, Vec::new()));
    }
    let mut sorted: Vec<u32> = rows.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    // First table row of each row group.
    let mut firsts = Vec::with_capacity(md.num_row_groups() + 1);
    let mut at = 0u64;
    for rg in md.row_groups() {
        firsts.push(at);
        at += rg.num_rows().max(0) as u64;
    }
    firsts.push(at);
    if let Some(&last) = sorted.last() {
        if u64::from(last) >= at {
            return Err(Error::Other(format!(
                "row {last} is past the end of the table ({at} rows)"
            )));
        }
    }
    let group_of = |r: u64| firsts.partition_point(|&f| f <= r) - 1;
    let mut groups: Vec<usize> = sorted.iter().map(|&r| group_of(u64::from(r))).collect();
    groups.dedup();
    // The selection runs over the concatenation of the chosen groups.
    let mut selectors = Vec::new();
    let mut si = 0usize;
    for &g in &groups {
        let (lo, hi) = (firsts[g], firsts[g + 1]);
        let mut pos = lo;
        while si < sorted.len() && u64::from(sorted[si]) < hi {
            let r = u64::from(sorted[si]);
            if r > pos {
                selectors.push(RowSelector::skip((r - pos) as usize));
            }
            selectors.push(RowSelector::select(1));
            pos = r + 1;
            si += 1;
        }
        if hi > pos {
            selectors.push(RowSelector::skip((hi - pos) as usize));
        }
    }
    let reader = b
        .with_row_groups(groups)
        .with_row_selection(RowSelection::from(selectors))
        .with_batch_size(crate::tables::BATCH_ROWS)
        .build()?;
    let batches = reader.collect::<std::result::Result<Vec<_>, _>>()?;
    let got = arrow_select::concat::concat_batches(&schema, batches.iter())?;
    // got row j is table row sorted[j]; put them in the asked order.
    let take: Vec<u32> = rows
        .iter()
        .map(|r| sorted.binary_search(r).unwrap_or(0) as u32)
        .collect();
    let idx = arrow_array::UInt32Array::from(take);
    let mut cols: Vec<ArrayRef> = got
        .columns()
        .iter()
        .map(|c| arrow_select::take::take(c.as_ref(), &idx, None))
        .collect::<std::result::Result<_, _>>()?;
    cols.push(std::sync::Arc::new(
        arrow_array::UInt64Array::from_iter_values(rows.iter().map(|&r| u64::from(r))),
    ));
    Ok((
        out_schema.clone(),
        vec![RecordBatch::try_new(out_schema, cols)?],
    ))
}

/// One search hit: a row of a timeline table whose text matched.
#[derive(Clone, Debug, serde::Serialize, PartialEq)]
pub struct Hit {
    /// Table name (`Instruction`, `DmaPacket`, `SemaphoreUpdate`).
    pub table: String,
    /// Table row.
    pub row: u32,
    /// Row start and end, table ns (end = start when the table has no end or duration).
    pub start: i64,
    pub end: i64,
    /// The first matching column and its text.
    pub column: String,
    pub text: String,
}

/// What [`search`] found.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct SearchResult {
    /// Rows that matched, over every table searched.
    pub total: u64,
    /// The `limit` earliest hits by (start, table, row) (all of them when `total` ≤ `limit`).
    pub hits: Vec<Hit>,
    /// `total` > `hits.len()`.
    pub capped: bool,
}

/// Columns a search reads in each table: every text column (opcode, BIR/HLO/framework names,
/// NKI `file:line`, queue and semaphore names, …) and the time columns for revealing a hit.
fn search_columns(schema: &arrow_schema::Schema) -> Vec<String> {
    schema
        .fields()
        .iter()
        .filter(|f| is_text(f.data_type()))
        .map(|f| f.name().clone())
        .collect()
}

/// Searches the text columns of `tables` (`(name, reader, time columns)`) for `query`
/// (case-insensitive substring; an empty query matches nothing) and returns the total count and
/// the `limit` earliest hits (a heap of `limit` entries: bounded whatever the tables hold). A row
/// counts once, under its first matching column in schema order. Errors: a failed read, a time
/// column that is not int64.
pub fn search<R: ChunkReader + 'static>(
    tables: Vec<(&str, R, crate::lod::TimeCols<'_>)>,
    query: &str,
    limit: usize,
) -> Result<SearchResult> {
    #[derive(PartialEq, Eq, PartialOrd, Ord)]
    struct Slot(i64, usize, u32);
    let q = query.trim().to_lowercase();
    let mut out = SearchResult::default();
    if q.is_empty() {
        return Ok(out);
    }
    let mut heap: BinaryHeap<(Slot, usize)> = BinaryHeap::new();
    let mut found: Vec<Option<Hit>> = Vec::new();
    for (ti, (name, reader, time)) in tables.into_iter().enumerate() {
        let b = ParquetRecordBatchReaderBuilder::try_new(reader)?;
        let mut cols = search_columns(b.schema());
        if cols.is_empty() {
            continue;
        }
        let text_cols = cols.clone();
        for c in [Some(time.start), time.end, time.duration]
            .into_iter()
            .flatten()
        {
            if b.schema().index_of(c).is_ok() && !cols.iter().any(|x| x == c) {
                cols.push(c.to_string());
            }
        }
        let idx: Vec<usize> = cols
            .iter()
            .filter_map(|c| b.schema().index_of(c).ok())
            .collect();
        let mask = ProjectionMask::roots(b.parquet_schema(), idx);
        let rd = b
            .with_projection(mask)
            .with_batch_size(crate::tables::BATCH_ROWS)
            .build()?;
        let mut row = 0u32;
        for batch in rd {
            let batch = batch?;
            let n = batch.num_rows();
            let i64_col = |c: Option<&str>| -> Result<Option<arrow_array::Int64Array>> {
                let Some(a) = c.and_then(|c| batch.column_by_name(c)) else {
                    return Ok(None);
                };
                a.as_primitive_opt::<arrow_array::types::Int64Type>()
                    .cloned()
                    .map(Some)
                    .ok_or_else(|| {
                        Error::Other(format!("search: {name} time column is {}", a.data_type()))
                    })
            };
            let (s, e, d) = (
                i64_col(Some(time.start))?,
                i64_col(time.end)?,
                i64_col(time.duration)?,
            );
            // Per column and dictionary value, whether it matches (tested once per batch).
            let mut which: Vec<Option<(usize, String)>> = vec![None; n];
            for (ci, c) in text_cols.iter().enumerate() {
                let Some(a) = batch.column_by_name(c) else {
                    continue;
                };
                let Some(sc) = StrCol::of(a.as_ref()) else {
                    continue;
                };
                match &sc {
                    StrCol::Dict(keys, values) => {
                        let hit: Vec<bool> = (0..values.len())
                            .map(|j| {
                                values.is_valid(j) && values.value(j).to_lowercase().contains(&q)
                            })
                            .collect();
                        for (i, w) in which.iter_mut().enumerate() {
                            if w.is_none() && keys.is_valid(i) {
                                let k = keys.value(i) as usize;
                                if hit.get(k).copied().unwrap_or(false) {
                                    *w = Some((ci, values.value(k).to_string()));
                                }
                            }
                        }
                    }
                    StrCol::Plain(_) => {
                        for (i, w) in which.iter_mut().enumerate() {
                            if w.is_none() {
                                if let Some(t) = sc.get(i) {
                                    if t.to_lowercase().contains(&q) {
                                        *w = Some((ci, t.to_string()));
                                    }
                                }
                            }
                        }
                    }
                }
            }
            for (i, w) in which.into_iter().enumerate() {
                let Some((ci, text)) = w else { continue };
                out.total += 1;
                let start = s
                    .as_ref()
                    .filter(|a| a.is_valid(i))
                    .map_or(0, |a| a.value(i));
                let end = match (&e, &d) {
                    (Some(e), _) if e.is_valid(i) => e.value(i),
                    (_, Some(d)) if d.is_valid(i) => start.saturating_add(d.value(i)),
                    _ => start,
                };
                let r = row + i as u32;
                let slot = Slot(start, ti, r);
                if heap.len() >= limit {
                    match heap.peek() {
                        Some((w, _)) if slot < *w => {}
                        _ => continue,
                    }
                    if let Some((_, at)) = heap.pop() {
                        found[at] = None;
                    }
                }
                if limit == 0 {
                    continue;
                }
                heap.push((slot, found.len()));
                found.push(Some(Hit {
                    table: name.to_string(),
                    row: r,
                    start,
                    end,
                    column: text_cols[ci].clone(),
                    text,
                }));
                // Dropped entries leave holes: compact when they dominate (bounded by 2 × limit).
                if found.len() > 2 * limit.max(1024) {
                    let mut keep: Vec<(Slot, Hit)> = heap
                        .drain()
                        .filter_map(|(sl, at)| found[at].take().map(|h| (sl, h)))
                        .collect();
                    found.clear();
                    for (sl, h) in keep.drain(..) {
                        heap.push((sl, found.len()));
                        found.push(Some(h));
                    }
                }
            }
            row += n as u32;
        }
    }
    let mut hits: Vec<(Slot, Hit)> = heap
        .into_vec()
        .into_iter()
        .filter_map(|(sl, at)| found[at].take().map(|h| (sl, h)))
        .collect();
    hits.sort_by(|a, b| a.0.cmp(&b.0));
    out.capped = out.total > hits.len() as u64;
    out.hits = hits.into_iter().map(|(_, h)| h).collect();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A Parquet file of `n` rows in row groups of 7: `v` = (i * 37) % 101 (some nulls), `s` a
    /// dictionary-like text, `start_ts`, `duration_ns`.
    fn sample(n: usize) -> bytes::Bytes {
        use arrow_array::{Int64Array, StringArray};
        let v: Int64Array = (0..n as i64)
            .map(|i| (i % 13 != 5).then_some((i * 37) % 101))
            .collect();
        let s: StringArray = (0..n)
            .map(|i| Some(["MATMUL", "0xA7", "inst.2750", "DRAIN"][i % 4]))
            .collect();
        let st: Int64Array = (0..n as i64).map(|i| Some(1000 - i * 3)).collect();
        let du: Int64Array = (0..n as i64).map(|_| Some(2)).collect();
        let schema = Arc::new(arrow_schema::Schema::new(vec![
            arrow_schema::Field::new("v", DataType::Int64, true),
            arrow_schema::Field::new("s", DataType::Utf8, true),
            arrow_schema::Field::new("start_ts", DataType::Int64, true),
            arrow_schema::Field::new("duration_ns", DataType::Int64, true),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(v), Arc::new(s), Arc::new(st), Arc::new(du)],
        )
        .unwrap();
        let mut out = Vec::new();
        let props = parquet::file::properties::WriterProperties::builder()
            .set_max_row_group_row_count(Some(7))
            .build();
        let mut w = parquet::arrow::ArrowWriter::try_new(&mut out, schema, Some(props)).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        bytes::Bytes::from(out)
    }

    fn v_of(i: u32) -> Option<i64> {
        let i = i64::from(i);
        (i % 13 != 5).then_some((i * 37) % 101)
    }

    #[test]
    fn sort_filter_and_rows() {
        let pq = sample(100);
        let asc = build_view(pq.clone(), Some(("v", false)), &[]).unwrap();
        assert_eq!(asc.rows.len(), 100);
        let vals: Vec<Option<i64>> = asc.rows.iter().map(|&r| v_of(r)).collect();
        let nn = vals.iter().filter(|v| v.is_some()).count();
        assert!(vals[..nn].windows(2).all(|w| w[0] <= w[1]), "{vals:?}");
        assert!(vals[nn..].iter().all(|v| v.is_none()), "nulls last");
        let desc = build_view(pq.clone(), Some(("v", true)), &[]).unwrap();
        let dv: Vec<Option<i64>> = desc.rows.iter().map(|&r| v_of(r)).collect();
        assert!(dv[..nn].windows(2).all(|w| w[0] >= w[1]));
        assert_eq!(dv[0], Some(100));
        let f = [
            Filter::parse("v", ">= 50").unwrap(),
            Filter::parse("s", "a7").unwrap(),
        ];
        let fv = build_view(pq.clone(), None, &f).unwrap();
        let want: Vec<u32> = (0..100u32)
            .filter(|&i| i % 4 == 1 && v_of(i).is_some_and(|v| v >= 50))
            .collect();
        assert_eq!(fv.rows, want);
        assert_eq!(fv.matched, want.len() as u64);
        let txt = build_view(pq.clone(), Some(("s", true)), &[]).unwrap();
        assert_eq!(
            txt.rows[..3],
            [2, 6, 10],
            "byte order, descending: inst.2750 > MATMUL > DRAIN > 0xA7"
        );
        let (_, b) = rows_of(pq.clone(), &[99, 3, 50, 3]).unwrap();
        let b = &b[0];
        let r = b
            .column_by_name("nscope_row")
            .unwrap()
            .as_primitive::<arrow_array::types::UInt64Type>();
        assert_eq!(r.values().to_vec(), vec![99, 3, 50, 3]);
        let v = b
            .column_by_name("v")
            .unwrap()
            .as_primitive::<arrow_array::types::Int64Type>();
        assert_eq!(v.value(0), v_of(99).unwrap());
        assert_eq!(v.value(2), v_of(50).unwrap());
        assert!(rows_of(pq.clone(), &[100]).is_err());
        assert!(Filter::parse("v", "> x").is_err());
        assert!(build_view(pq.clone(), None, &[Filter::parse("s", ">3").unwrap()]).is_err());
        assert!(build_view(pq, Some(("nope", false)), &[]).is_err());
    }

    #[test]
    fn search_earliest_first_and_capped() {
        let pq = sample(100);
        let t = crate::lod::TimeCols {
            start: "start_ts",
            end: None,
            duration: Some("duration_ns"),
        };
        let r = search(vec![("T", pq.clone(), t)], "INST.27", 5).unwrap();
        assert_eq!(r.total, 25);
        assert!(r.capped);
        // Starts fall with the row: the earliest are the last rows with s = inst.2750.
        let rows: Vec<u32> = r.hits.iter().map(|h| h.row).collect();
        assert_eq!(rows, vec![98, 94, 90, 86, 82]);
        assert_eq!(r.hits[0].start, 1000 - 98 * 3);
        assert_eq!(r.hits[0].end, r.hits[0].start + 2);
        assert_eq!(r.hits[0].text, "inst.2750");
        let all = search(vec![("T", pq, t)], "0xa7", 1000).unwrap();
        assert_eq!(all.total, 25);
        assert_eq!(all.hits.len(), 25);
        assert!(!all.capped);
    }
}
