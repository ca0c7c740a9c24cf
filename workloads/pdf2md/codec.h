// Byte codecs (rayorch::Codec) for the values the pdf2md stages pass between each other, so
// they can cross a process boundary (e.g. between the Ray actors of the Python package).
#pragma once

#include <string>
#include <string_view>

#include "pdf2md/pdf2md.h"

#include "rayorch/codec.h"

template <>
struct rayorch::Codec<pdf2md::PageRef> {
  static void encode(const pdf2md::PageRef& v, std::string& out) {
    Codec<std::uint32_t>::encode(v.number, out);
  }
  static pdf2md::PageRef decode(std::string_view& in) {
    return pdf2md::PageRef{Codec<std::uint32_t>::decode(in)};
  }
};

template <>
struct rayorch::Codec<pdf2md::PageImage> {
  static void encode(const pdf2md::PageImage& v, std::string& out) {
    for (std::uint32_t x : {v.number, v.width, v.height, v.dpi})
      Codec<std::uint32_t>::encode(x, out);
    Codec<std::uint64_t>::encode(v.pixels.size(), out);
    out.append(reinterpret_cast<const char*>(v.pixels.data()), v.pixels.size());
  }
  static pdf2md::PageImage decode(std::string_view& in) {
    pdf2md::PageImage v;
    v.number = Codec<std::uint32_t>::decode(in);
    v.width = Codec<std::uint32_t>::decode(in);
    v.height = Codec<std::uint32_t>::decode(in);
    v.dpi = Codec<std::uint32_t>::decode(in);
    const std::string_view bytes =
        detail::take_bytes(in, detail::get_length(in, 1), "the pixels of a PageImage");
    v.pixels.assign(bytes.begin(), bytes.end());
    return v;
  }
};

template <>
struct rayorch::Codec<pdf2md::DocumentInfo> {
  static void encode(const pdf2md::DocumentInfo& v, std::string& out) {
    Codec<std::string>::encode(v.stem, out);
    Codec<std::uint32_t>::encode(v.pages, out);
  }
  static pdf2md::DocumentInfo decode(std::string_view& in) {
    pdf2md::DocumentInfo v;
    v.stem = Codec<std::string>::decode(in);
    v.pages = Codec<std::uint32_t>::decode(in);
    return v;
  }
};

template <>
struct rayorch::Codec<pdf2md::Markdown> {
  static void encode(const pdf2md::Markdown& v, std::string& out) {
    Codec<std::string>::encode(v.stem, out);
    Codec<std::uint32_t>::encode(v.pages, out);
    Codec<std::string>::encode(v.text, out);
  }
  static pdf2md::Markdown decode(std::string_view& in) {
    pdf2md::Markdown v;
    v.stem = Codec<std::string>::decode(in);
    v.pages = Codec<std::uint32_t>::decode(in);
    v.text = Codec<std::string>::decode(in);
    return v;
  }
};
