"""Council Borda (`council_borda`): Borda points of reviewer-council rankings, averaged per query [Council]."""
