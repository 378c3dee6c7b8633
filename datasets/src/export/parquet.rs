use std::path::Path;
use std::sync::Arc;

use parquet::data_type::{ByteArray, ByteArrayType, FloatType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;

use super::table::{ColumnData, Table};
use crate::error::{DatasetError, Result};

pub fn write(table: &Table, out: &Path) -> Result<()> {
    let err = |e: parquet::errors::ParquetError| DatasetError::Export {
        path: out.into(),
        reason: e.to_string(),
    };
    let fields: Vec<String> = table
        .columns
        .iter()
        .map(|c| match c.data {
            ColumnData::Str(_) => format!("REQUIRED BYTE_ARRAY {} (UTF8);", c.name),
            ColumnData::I64(_) => format!("REQUIRED INT64 {};", c.name),
            ColumnData::F32(_) => format!("REQUIRED FLOAT {};", c.name),
        })
        .collect();
    let schema = Arc::new(
        parse_message_type(&format!("message hspi_records {{ {} }}", fields.join(" ")))
            .map_err(err)?,
    );
    let file = std::fs::File::create(out).map_err(DatasetError::io(out))?;
    let props = Arc::new(
        WriterProperties::builder()
            .set_created_by("hspi".into())
            .build(),
    );
    let mut writer = SerializedFileWriter::new(file, schema, props).map_err(err)?;
    let mut group = writer.next_row_group().map_err(err)?;
    let mut columns = table.columns.iter();
    while let Some(mut col) = group.next_column().map_err(err)? {
        let column = columns
            .next()
            .expect("schema and table have the same columns");
        match &column.data {
            ColumnData::Str(v) => {
                let v: Vec<ByteArray> = v.iter().map(|s| ByteArray::from(s.as_str())).collect();
                col.typed::<ByteArrayType>()
                    .write_batch(&v, None, None)
                    .map_err(err)?;
            }
            ColumnData::I64(v) => {
                col.typed::<Int64Type>()
                    .write_batch(v, None, None)
                    .map_err(err)?;
            }
            ColumnData::F32(v) => {
                col.typed::<FloatType>()
                    .write_batch(v, None, None)
                    .map_err(err)?;
            }
        }
        col.close().map_err(err)?;
    }
    group.close().map_err(err)?;
    writer.close().map_err(err)?;
    Ok(())
}
