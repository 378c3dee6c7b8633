//! Typesetting through Typst, in-process: a small document builder whose text always enters the
//! source as Typst string literals (a report's text can never be read as markup), charts as SVG
//! files of the document, and the compile to PDF with Typst's embedded fonts.

use std::sync::LazyLock;

use typst::diag::{FileError, FileResult};
use typst::foundations::{Bytes, Datetime, Duration};
use typst::syntax::{FileId, RootedPath, Source, VirtualPath, VirtualRoot};
use typst::text::{Font, FontBook};
use typst::utils::LazyHash;
use typst::{Library, LibraryExt, World};
use typst_layout::PagedDocument;

use crate::svg::Chart;

/// A document being written: its Typst source and the files (charts) it includes.
#[derive(Debug, Clone, Default)]
pub struct Doc {
    source: String,
    files: Vec<(String, Vec<u8>)>,
}

/// `text` as a Typst string literal.
fn lit(text: &str) -> String {
    let mut s = String::with_capacity(text.len() + 2);
    s.push('"');
    for c in text.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\r' | '\t' => s.push(' '),
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

/// The colour a verdict is printed in (as in the HTML report).
fn verdict_color(verdict: &str) -> &'static str {
    match verdict.split_whitespace().next().unwrap_or("") {
        "consistent" | "identified" | "evaluated" => "rgb(\"#1a7f37\")",
        "mismatch" | "tampered" | "mixed" => "rgb(\"#b42318\")",
        _ => "rgb(\"#9a6700\")",
    }
}

impl Doc {
    /// A4 pages numbered "n / total" (landscape for wide tables), the title in the PDF's
    /// metadata.
    pub fn new(title: &str, landscape: bool) -> Doc {
        let source = format!(
            "#set document(title: {})\n#set page(paper: \"a4\", flipped: {landscape}, margin: (x: 1.8cm, y: 2cm), numbering: \"1 / 1\", number-align: center)\n#set text(font: \"Libertinus Serif\", size: 10pt, lang: \"en\")\n#show heading.where(level: 1): set text(size: 17pt)\n#set table(stroke: 0.5pt + luma(170), inset: 4pt)\n#show table: set text(size: 8.5pt)\n#show table: set par(justify: false)\n#show table: set text(hyphenate: true)\n#show figure.caption: set text(size: 9pt)\n",
            lit(title)
        );
        Doc {
            source,
            files: Vec::new(),
        }
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    pub fn heading(&mut self, level: u8, text: &str) {
        self.source
            .push_str(&format!("#heading(level: {level}, {})\n", lit(text)));
    }

    pub fn para(&mut self, text: &str) {
        self.source.push_str(&format!("#par({})\n", lit(text)));
    }

    /// The verdict in its colour above the one-sentence finding, framed.
    pub fn summary(&mut self, verdict: &str, finding: &str) {
        self.source.push_str(&format!(
            "#block(stroke: 1pt + luma(90), radius: 4pt, inset: 10pt, width: 100%)[#text(size: 15pt, weight: \"bold\", fill: {})[#upper({})] #linebreak() #{}]\n",
            verdict_color(verdict),
            lit(verdict),
            lit(finding)
        ));
    }

    /// A table with aligned columns; a header of empty names makes a two-column fact table.
    pub fn table<const N: usize>(&mut self, header: &[&str; N], rows: &[[String; N]]) {
        let facts = header.iter().all(|h| h.is_empty());
        let columns = if facts && N == 2 {
            "(auto, 1fr)".to_string()
        } else {
            N.to_string()
        };
        let mut s = format!("#table(columns: {columns}, align: left,\n");
        if !facts {
            let cells: Vec<String> = header
                .iter()
                .map(|h| format!("text(weight: \"bold\", {})", lit(h)))
                .collect();
            s.push_str(&format!("  table.header({}),\n", cells.join(", ")));
        }
        for row in rows {
            let cells: Vec<String> = row.iter().map(|c| lit(c)).collect();
            s.push_str(&format!("  {},\n", cells.join(", ")));
        }
        s.push_str(")\n");
        self.source.push_str(&s);
    }

    pub fn list(&mut self, items: &[String]) {
        if items.is_empty() {
            return;
        }
        let items: Vec<String> = items.iter().map(|i| lit(i)).collect();
        self.source
            .push_str(&format!("#list({})\n", items.join(", ")));
    }

    /// A chart as a figure with its caption, the SVG a file of the document.
    pub fn chart(&mut self, chart: &Chart) {
        let name = format!("chart-{}.svg", self.files.len());
        self.source.push_str(&format!(
            "#figure(image({}, width: 100%), caption: {})\n",
            lit(&name),
            lit(&chart.title)
        ));
        self.files.push((name, chart.svg.clone().into_bytes()));
    }

    pub fn page_break(&mut self) {
        self.source.push_str("#pagebreak(weak: true)\n");
    }
}

/// Typst's embedded fonts and standard library, loaded once per process.
struct Assets {
    library: LazyHash<Library>,
    book: LazyHash<FontBook>,
    fonts: Vec<Font>,
}

static ASSETS: LazyLock<Assets> = LazyLock::new(|| {
    let fonts: Vec<Font> = typst_assets::fonts()
        .flat_map(|data| Font::iter(Bytes::new(data)))
        .collect();
    Assets {
        library: LazyHash::new(Library::builder().build()),
        book: LazyHash::new(FontBook::from_fonts(&fonts)),
        fonts,
    }
});

/// The document as Typst's world: its source is the main file, its charts the other files.
struct DocWorld<'a> {
    main: Source,
    doc: &'a Doc,
}

impl World for DocWorld<'_> {
    fn library(&self) -> &LazyHash<Library> {
        &ASSETS.library
    }
    fn book(&self) -> &LazyHash<FontBook> {
        &ASSETS.book
    }
    fn main(&self) -> FileId {
        self.main.id()
    }
    fn source(&self, id: FileId) -> FileResult<Source> {
        if id == self.main.id() {
            Ok(self.main.clone())
        } else {
            Err(FileError::NotSource)
        }
    }
    fn file(&self, id: FileId) -> FileResult<Bytes> {
        let path = id.vpath().get_without_slash();
        self.doc
            .files
            .iter()
            .find(|(name, _)| path == name)
            .map(|(_, bytes)| Bytes::new(bytes.clone()))
            .ok_or_else(|| FileError::NotFound(path.into()))
    }
    fn font(&self, index: usize) -> Option<Font> {
        ASSETS.fonts.get(index).cloned()
    }
    fn today(&self, _offset: Option<Duration>) -> Option<Datetime> {
        // No date in the typesetting: the same report gives the same PDF.
        None
    }
}

/// The document typeset as PDF. The source is generated here with every text quoted, so a
/// failure is hspi's own bug: it panics with Typst's diagnostics.
pub fn pdf(doc: &Doc) -> Vec<u8> {
    let world = DocWorld {
        main: Source::new(
            FileId::new(RootedPath::new(
                VirtualRoot::Project,
                VirtualPath::new("report.typ").expect("a valid path"),
            )),
            doc.source.clone(),
        ),
        doc,
    };
    let compiled = typst::compile::<PagedDocument>(&world).output;
    let document = compiled.unwrap_or_else(|errors| {
        let messages: Vec<String> = errors.iter().map(|e| e.message.to_string()).collect();
        panic!(
            "Typst could not typeset the report: {}\n{}",
            messages.join("; "),
            doc.source
        )
    });
    // Untagged: a tagged PDF 1.7 carries `/MarkInfo << /Suspects false >>`, which poppler
    // (pdfinfo, pdftoppm) reports as a syntax error on every page it opens.
    let options = typst_pdf::PdfOptions {
        tagged: false,
        ..Default::default()
    };
    typst_pdf::pdf(&document, &options).unwrap_or_else(|errors| {
        let messages: Vec<String> = errors.iter().map(|e| e.message.to_string()).collect();
        panic!("Typst could not write the PDF: {}", messages.join("; "))
    })
}
