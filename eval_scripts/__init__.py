"""eval_scripts"""
