"""Selection as data: tables of measured winners, the candidate space and the tuner that fills the tables."""
