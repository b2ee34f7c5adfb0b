"""mis_icc_metric"""
