"""Text as scoi reads it: Moses normalisation and tokenisation (sacremoses' rules without its
import cost) and the one rule for line-oriented input files. No database, no models."""
