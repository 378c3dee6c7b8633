use std::io::Write;
use std::path::Path;

use super::table::{ColumnData, Table};
use crate::error::{DatasetError, Result};

fn quote(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// f32 values print in their shortest exact form, so parsing them back gives the same bits.
pub fn write(table: &Table, out: &Path) -> Result<()> {
    let file = std::fs::File::create(out).map_err(DatasetError::io(out))?;
    let mut w = std::io::BufWriter::new(file);
    let header: Vec<String> = table.columns.iter().map(|c| quote(&c.name)).collect();
    let mut text = header.join(",");
    text.push('\n');
    w.write_all(text.as_bytes())
        .map_err(DatasetError::io(out))?;
    for row in 0..table.rows {
        let cells: Vec<String> = table
            .columns
            .iter()
            .map(|c| match &c.data {
                ColumnData::Str(v) => quote(&v[row]),
                ColumnData::I64(v) => v[row].to_string(),
                ColumnData::F32(v) if v[row].is_nan() => "NaN".to_string(),
                ColumnData::F32(v) => format!("{:?}", v[row]),
            })
            .collect();
        let mut line = cells.join(",");
        line.push('\n');
        w.write_all(line.as_bytes())
            .map_err(DatasetError::io(out))?;
    }
    w.flush().map_err(DatasetError::io(out))
}
